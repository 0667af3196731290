kubetune_module(exercise ${CMAKE_CURRENT_LIST_DIR}/src DEPS kt_core REGISTER kubetune::exercise::register_exercise BIND bind_exercise BIND_SOURCES ${CMAKE_CURRENT_LIST_DIR}/python/bind_exercise.cpp)
