package main

import (
	"os"
	"path/filepath"
)

// defaultJournal is where the journal lives unless -journal says
// otherwise: $XDG_STATE_HOME/geoidem/sender.journal, else
// ~/.local/state/geoidem/sender.journal.
func defaultJournal() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "geoidem", "sender.journal")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "geoidem", "sender.journal")
	}
	return "geoidem-sender.journal"
}
