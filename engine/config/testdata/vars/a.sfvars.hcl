image = "from-a"
cpus  = 3
nodes = { spark-01 = { host = "10.0.0.1" } }
