// Umbrella header: the core API (spaces, studies, searcher registry). Module headers are included on demand.
#pragma once

#include <nlohmann/json.hpp>  // the umbrella is complete: configs, results and studies as JSON

#include "kubetune/core/device.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/parallel.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/core/searcher.hpp"
#include "kubetune/core/space.hpp"
#include "kubetune/core/study.hpp"
#include "kubetune/core/trial.hpp"
