package testkit

import (
	"errors"
	"net"
	"strconv"
)

// freePort returns a loopback port that is free, and whose cluster bus port
// (port+10000) is free too, at the time of the call.
func freePort() (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		l.Close()
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, errors.New("redisserver: no free loopback port pair (port, port+10000) found in 50 tries")
}
