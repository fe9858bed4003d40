package client

import "github.com/geoidem/geoidem/internal/senderclock"

// The clock of a Config or a FileJournalConfig is set only through
// senderclock.Set, by the repository's tests, test kits and examples.
func init() {
	senderclock.Set = func(config any, c senderclock.Clock) {
		switch cfg := config.(type) {
		case *Config:
			cfg.clock = c
		case *FileJournalConfig:
			cfg.clock = c
		default:
			panic("senderclock.Set: not a *client.Config or *client.FileJournalConfig")
		}
	}
}
