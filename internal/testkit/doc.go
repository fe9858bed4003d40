// Package testkit holds what the repository's tests, examples and benchmarks
// need around the code under test, in one place: the one way to reach the
// shared test Redis and PostgreSQL (SharedAddr, SharedURL, DeletePrefix),
// private redis-server processes (StartRedis), a private Redis Cluster
// (StartCluster), a PostgreSQL primary with a streaming standby
// (StartStandby), a loopback TCP proxy that cuts and stalls connections
// (NewCutter), allocation and CPU probes (AllocBytes, ProcessCPU, RedisCPU)
// and the GeoJSON shapes the validation tests and benchmarks feed
// (Circle, Polygon, Triangles, NullFeatures and the rest).
//
// Nothing in the library imports it.
package testkit
