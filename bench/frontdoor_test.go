package main

import (
	"os"
	"strings"
	"testing"
)

// TestMain lets this test binary be section 9's children too: the section
// starts the binary it runs in as its services and attackers.
func TestMain(m *testing.M) {
	if code, ok := frontdoorChild(); ok {
		os.Exit(code)
	}
	if code, ok := reverseProxyChild(); ok {
		os.Exit(code) // section 12's ReverseProxy
	}
	os.Exit(m.Run())
}

// TestFrontdoorSection runs section 9 alone in the tiny mode (400 idle
// connections, 3 s of slow bodies) and checks its tables and targets.
func TestFrontdoorSection(t *testing.T) {
	md, _ := runSection(t, "frontdoor")
	for _, want := range []string{"## 9. Front door", "### Slow bodies", "### Idle connections", "| as main wires it |", "| BodyRate only |", "| front door |",
		"Front door against the target: ", "Front door against the targets: ", "slow bodies, 64 connections from 4 addresses",
		"### Slow bodies from eight addresses", "| front door without CutBody |", "slow bodies, 64 connections from 8 addresses"} {
		if !strings.Contains(md, want) {
			t.Errorf("REPORT.md lacks %q:\n%s", want, md)
		}
	}
	t.Log(md)
}
