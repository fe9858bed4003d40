package main

import (
	"context"
	"time"
)

// clock is a source of time and waits that tests give the command in
// app.clock, for the features' observation_time, the sender's waits and
// deadline, and the journal's times. Without one the command runs on the
// real clock.
type clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// setClock gives config, a *client.Config or a *client.FileJournalConfig,
// the clock c. The client has no public clock: the tests install it,
// reaching the repository's internal one; it is nil in the command.
var setClock func(config any, c clock)

// useClock gives config the tests' clock, if they set one.
func (a app) useClock(config any) {
	if a.clock != nil && setClock != nil {
		setClock(config, a.clock)
	}
}
