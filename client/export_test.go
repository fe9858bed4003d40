package client

import (
	"iter"
	"math/rand/v2"
	"os"
	"time"
)

// JournalFile is journalFile, for the tests of package client_test.
type JournalFile = journalFile

// OpenFileJournalWrapped is OpenFileJournal with wrap standing between the
// journal and every file it writes (the open journal and each compacted
// one): the tests simulate a full disk there.
func OpenFileJournalWrapped(path string, cfg FileJournalConfig, wrap func(*os.File) JournalFile) (*FileJournal, error) {
	return openFileJournal(path, cfg, wrap)
}

// Datasync is datasync, for the raw baseline of BenchmarkJournalCost.
var Datasync = datasync

// Fallocate is fallocate, for the raw overlap of BenchmarkJournalCost.
var Fallocate = fallocate

// Syncs returns how many group commits the journal made.
func (j *FileJournal) Syncs() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.syncs
}

// Strategies lists every strategy, in declaration order.
func Strategies() []Strategy {
	return []Strategy{Decorrelated, FullJitter, EqualJitter, Exponential, None}
}

// Lines returns how many lines the journal's file holds.
func (j *FileJournal) Lines() int { return j.lineCount() }

// Deposit is deposit, for the tests of package client_test.
func (b *RetryBudget) Deposit() { b.deposit() }

// Withdraw is withdraw, for the tests of package client_test.
func (b *RetryBudget) Withdraw() bool { return b.withdraw() }

// Tokens returns the tokens now in the bucket.
func (b *RetryBudget) Tokens() float64 { return b.available() }

// Delays returns the infinite sequence of delays before retries 1, 2, 3, …,
// each computed by [Backoff.Next] from the one before.
func (b Backoff) Delays(rnd *rand.Rand) iter.Seq[time.Duration] {
	return func(yield func(time.Duration) bool) {
		var prev time.Duration
		for n := 1; ; n++ {
			prev = b.Next(prev, n, rnd)
			if !yield(prev) {
				return
			}
		}
	}
}

// ErrInvalidConfig is errInvalidConfig, which New's errors wrap.
var ErrInvalidConfig = errInvalidConfig

// DefaultMultiplier is the default Multiplier of Decorrelated.
const DefaultMultiplier = defaultMultiplier

// WithCompactAt returns cfg with the line count below which the journal is
// never compacted set to n.
func WithCompactAt(cfg FileJournalConfig, n int) FileJournalConfig {
	cfg.compactAt = n
	return cfg
}

// CompactChunk is compactChunk, the most a compaction writes at once.
const CompactChunk = compactChunk
