package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/geoidem/geoidem/client"
)

// outcome tallies the deliveries.
type outcome struct {
	total    int
	progress io.Writer // the terminal, or nil for no progress line

	inFlight atomic.Int64 // deliveries started and not ended

	mu                        sync.Mutex
	done, delivered, replayed int
	sentEarlier               int            // the receiver holds another send of the event (client.ErrSentEarlier)
	refusedEarlier            int            // not sent: the journal records it as refused (client.ErrRefusedEarlier)
	interrupted               int            // stopped by the signal, or never started
	failed                    map[string]int // by reason, the words of the dead letters
	journalErr                error          // the first journal failure
	waiting                   map[string]int // waits between attempts in progress, by cause
}

// Reasons a feature was not delivered, in the order the summary lists
// them: client.DeliveryError.ReasonName, the words of the dead letters.
var reasons = []string{"permanent", "exhausted", "deadline", "retry-after-beyond-deadline", "budget", "canceled", "not-journaled", "journal-conflict", "error"}

// reason is the word for a failed delivery's err.
func reason(err error) string {
	var derr *client.DeliveryError
	switch {
	case errors.As(err, &derr):
		return derr.ReasonName()
	case errors.Is(err, client.ErrJournalConflict):
		return "journal-conflict"
	default:
		return "error"
	}
}

// notDelivered is how many features failed, for any reason.
func (o *outcome) notDelivered() int {
	n := 0
	for _, c := range o.failed {
		n += c
	}
	return n
}

// record counts one finished delivery, reports a failure on stderr and
// redraws the progress line. A journal that cannot record fails every
// feature the same way: only the first is reported, the summary counts
// them all.
func (o *outcome) record(f feature, res client.Result, err error, stderr io.Writer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done++
	report := err != nil
	if err == nil {
		o.delivered++
		if res.Replayed {
			o.replayed++
		}
	} else if errors.Is(err, client.ErrSentEarlier) {
		o.sentEarlier++ // not a failure: summed up at the end, not reported one by one
		report = false
	} else if why := reason(err); why == "interrupted" {
		o.interrupted++ // not a failure: left for a re-run, not reported one by one
		report = false
	} else {
		if o.failed == nil {
			o.failed = map[string]int{}
		}
		o.failed[why]++
		if errors.Is(err, client.ErrRefusedEarlier) {
			o.refusedEarlier++
		}
		if why == "not-journaled" {
			report = o.journalErr == nil
			if report {
				o.journalErr = err
			}
		}
	}
	if report {
		if o.progress != nil {
			fmt.Fprint(o.progress, "\r\033[K") // clear the progress line first
		}
		var b strings.Builder
		fmt.Fprintf(&b, "sender: %s: %v\n", f.source, err)
		for _, l := range problemLines(err) {
			fmt.Fprintf(&b, "sender:   %s\n", l)
		}
		io.WriteString(stderr, b.String())
	}
	o.draw()
}

// draw redraws the progress line on the terminal, if there is one. o.mu
// is held.
func (o *outcome) draw() {
	if o.progress == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\r\033[K%d/%d  delivered %d (replayed %d)", o.done, o.total, o.delivered, o.replayed)
	if o.sentEarlier > 0 {
		fmt.Fprintf(&b, "  sent earlier %d", o.sentEarlier)
	}
	fmt.Fprintf(&b, "  failed %d", o.notDelivered())
	if w := o.waits(); w != "" {
		b.WriteString("  " + w)
	}
	io.WriteString(o.progress, b.String())
}

// notStarted counts the features never handed to a delivery (the stop
// came first) as interrupted.
func (o *outcome) notStarted(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.interrupted += n
}

// printf writes a line to w, never within another one.
func (o *outcome) printf(w io.Writer, format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.progress != nil {
		fmt.Fprint(o.progress, "\r\033[K")
	}
	fmt.Fprintf(w, format, args...)
}

// progressLine writes where the run is, as one line: the progress when
// the output is not a terminal.
func (o *outcome) progressLine(w io.Writer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "sender: progress: %d/%d done, delivered %d (replayed %d), ", o.done, o.total, o.delivered, o.replayed)
	if o.sentEarlier > 0 {
		fmt.Fprintf(&b, "sent earlier %d, ", o.sentEarlier)
	}
	fmt.Fprintf(&b, "not delivered %d, in flight %d", o.notDelivered(), o.inFlight.Load())
	if ws := o.waits(); ws != "" {
		b.WriteString(", " + ws)
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

// summary prints the counts, failures by reason.
func (o *outcome) summary(w io.Writer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(w, "  %-20s%d\n", "delivered", o.delivered)
	fmt.Fprintf(w, "    %-18s%d\n", "replayed", o.replayed)
	fmt.Fprintf(w, "  %-20s%d\n", "sent earlier", o.sentEarlier)
	fmt.Fprintf(w, "  %-20s%d\n", "not delivered", o.notDelivered())
	for _, r := range reasons {
		if n := o.failed[r]; n > 0 {
			fmt.Fprintf(w, "    %s%d\n", pad(r, 18), n)
		}
	}
	// A reason the list does not know yet is still counted, never hidden.
	var other []string
	for r := range o.failed {
		if !slices.Contains(reasons, r) {
			other = append(other, r)
		}
	}
	slices.Sort(other)
	for _, r := range other {
		fmt.Fprintf(w, "    %s%d\n", pad(r, 18), o.failed[r])
	}
	fmt.Fprintf(w, "  %-20s%d\n", "interrupted", o.interrupted)
}

// pad returns s padded with spaces to width, and followed by one space at
// least.
func pad(s string, width int) string {
	return s + strings.Repeat(" ", max(width-len(s), 1))
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
