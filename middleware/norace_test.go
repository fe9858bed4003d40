//go:build !race

package middleware_test

const raceEnabled = false
