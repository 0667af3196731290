module kubetune.example/operator

go 1.19
