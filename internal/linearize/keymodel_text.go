package linearize

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

func (s KeyState) String() string {
	switch s.Status {
	case Absent:
		return "absent" + s.spentString()
	case Released:
		return fmt.Sprintf("released by %s", tokenString(s.Token)) + s.spentString()
	case Held:
		return fmt.Sprintf("held by %s (fp %s), lease %v from [%s, %s]",
			tokenString(s.Token), fpString(s.Fingerprint), s.Dur, ms(s.From), ms(s.To)) + s.spentString()
	case Completed:
		return fmt.Sprintf("completed by %s (fp %s), record %s, retention %v from [%s, %s]",
			tokenString(s.Token), fpString(s.Fingerprint), s.Record, s.Dur, ms(s.From), ms(s.To)) + s.spentString()
	}
	return "invalid state"
}

func (s KeyState) spentString() string {
	if s.Spent == "" {
		return ""
	}
	return "; spent: tok" + strings.ReplaceAll(s.Spent, ",", ", tok")
}

// DescribeKeyOp renders op on one line: client, call, wall-time interval
// and result.
func DescribeKeyOp(op KeyOp) string {
	in, out := op.Input, op.Output
	var call string
	switch in.Kind {
	case Claim:
		call = fmt.Sprintf("Claim(%s, fp %s, lease %v)", tokenString(in.Token), fpString(in.Fingerprint), in.Duration)
	case Extend:
		call = fmt.Sprintf("Extend(%s, lease %v)", tokenString(in.Token), in.Duration)
	case Complete:
		call = fmt.Sprintf("Complete(%s, %s, retention %v)", tokenString(in.Token), RecordKey(in.Record), in.Duration)
	case Release:
		call = fmt.Sprintf("Release(%s)", tokenString(in.Token))
	}
	var res string
	switch {
	case out.Err != nil && errors.Is(out.Err, keystore.ErrLeaseLost):
		res = "ErrLeaseLost"
	case out.Err != nil:
		res = "unknown outcome: " + out.Err.Error()
	case in.Kind == Extend:
		res = fmt.Sprintf("ok (%v left)", out.Remaining)
	case in.Kind != Claim:
		res = "ok"
	default:
		c := out.Claim
		switch {
		case c.Acquired:
			res = "acquired"
			if c.TookOver {
				res += " (took over)"
			}
		case c.State == keystore.InFlight:
			res = fmt.Sprintf("in flight (fp %s, %v left)", fpString(c.Fingerprint), c.LeaseRemaining)
		case c.State == keystore.Completed:
			res = fmt.Sprintf("completed (fp %s, record %s)", fpString(c.Fingerprint), RecordKey(c.Record))
		default:
			res = "state " + c.State.String()
		}
	}
	return fmt.Sprintf("c%d [%s, %s] %s -> %s", op.Client, ms(in.Start), ms(in.End), call, res)
}

func tokenString(t keystore.Token) string {
	if t == 0 {
		return "tok?"
	}
	return "tok" + strconv.FormatUint(uint64(t), 10)
}

// fpString shows a fingerprint as the text it starts with, if it is text
// padded with zeros (as the recorder makes them), else in hex.
func fpString(fp keystore.Fingerprint) string {
	s := strings.TrimRight(string(fp[:]), "\x00")
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			return fmt.Sprintf("%x", fp[:6])
		}
	}
	return s
}

func ms(d time.Duration) string {
	if d == Forever {
		return "∞"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64) + "ms"
}
