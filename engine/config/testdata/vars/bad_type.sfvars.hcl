cpus = "many"
