package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// ReadDeadLetters reads the dead letters a [JSONLinesSink] wrote, one JSON
// object per line; blank lines are skipped. It fails, naming the line, on
// any line that is not a dead letter with a URL and a key.
func ReadDeadLetters(r io.Reader) ([]DeadLetter, error) {
	br := bufio.NewReader(r)
	var out []DeadLetter
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var dl DeadLetter
			if jerr := json.Unmarshal(line, &dl); jerr != nil {
				return nil, fmt.Errorf("client: dead letter line %d: %w", n, jerr)
			}
			if dl.URL == "" || dl.Key == "" {
				return nil, fmt.Errorf("client: dead letter line %d: no url or key", n)
			}
			out = append(out, dl)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("client: dead letters: %w", err)
		}
	}
}
