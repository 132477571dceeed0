package etcdstore

func childMain() int { return 0 }
