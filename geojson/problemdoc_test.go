package geojson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
)

// problemDocCap is the bound the package documents for a problem document.
const problemDocCap = 64 << 10

// problemDoc validates data and returns the problem document of its
// error (nil when data is valid).
func problemDocOf(t *testing.T, data []byte) []byte {
	t.Helper()
	err := Validate(data, Options{})
	if err == nil {
		return nil
	}
	var pj interface{ ProblemJSON() []byte }
	if !errors.As(err, &pj) {
		t.Fatalf("error %T lacks ProblemJSON", err)
	}
	return pj.ProblemJSON()
}

// TestProblemDocumentBounded: a body with a huge
// member name followed by 100 bad numbers made a 600 MB answer (every
// pointer repeated the name, and '<' was HTML-escaped to six bytes).
func TestProblemDocumentBounded(t *testing.T) {
	for _, size := range []int{64 << 10, 1 << 20} {
		t.Run(strconv.Itoa(size>>10)+"KiB", func(t *testing.T) {
			data := testkit.ProblemBomb(size, 100)
			doc := problemDocOf(t, data)
			if len(doc) > problemDocCap {
				t.Fatalf("problem document of %d bytes for a %d-byte body, want at most %d", len(doc), len(data), problemDocCap)
			}
			if bytes.Contains(doc, []byte(`\u003c`)) {
				t.Error(`the problem document HTML-escapes '<' as \u003c`)
			}
			var d struct {
				Truncated bool
				Errors    []struct {
					Pointer   string
					Rule      string
					Truncated bool
				}
			}
			if err := json.Unmarshal(doc, &d); err != nil {
				t.Fatalf("problem document is not JSON: %v", err)
			}
			if len(d.Errors) == 0 {
				t.Fatal("problem document lists no problem")
			}
			name := "/properties/" + strings.Repeat("<", size)
			for i, e := range d.Errors {
				if e.Rule != RuleNumberTooLarge || !e.Truncated || len(e.Pointer) > maxPointerBytes ||
					!strings.HasPrefix(name, e.Pointer) || len(e.Pointer) < maxPointerBytes-4 {
					t.Fatalf("problem %d: %s %q (%d bytes), truncated %v: want %s, a prefix of the real pointer of %d bytes, marked truncated",
						i, e.Rule, e.Pointer[:min(len(e.Pointer), 40)], len(e.Pointer), e.Truncated, RuleNumberTooLarge, maxPointerBytes)
				}
			}
			if len(d.Errors) < 100 && !d.Truncated {
				t.Errorf("%d of 100 problems listed, but the document is not marked truncated", len(d.Errors))
			}
		})
	}
}

// TestValidateHostileNamesAllocateLinearly checks that the problems
// themselves, not only their rendering, stay in proportion to the input:
// Validate of the 1 MiB problem bomb allocates at most 3 bytes per input
// byte.
func TestValidateHostileNamesAllocateLinearly(t *testing.T) {
	for _, data := range [][]byte{
		testkit.ProblemBomb(1<<20, 100),
		// The same with a name made of escapes, which pointers decode.
		[]byte(`{"type":"Feature","geometry":null,"properties":{"` + strings.Repeat(`\u003c`, 150_000) +
			`":[` + strings.TrimSuffix(strings.Repeat("1e400,", 100), ",") + `]}}`),
	} {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		err := Validate(data, Options{})
		runtime.ReadMemStats(&m1)
		var verr *ValidationError
		if !errors.As(err, &verr) {
			t.Fatalf("Validate: %v, want a ValidationError", err)
		}
		if a := m1.TotalAlloc - m0.TotalAlloc; a > 3*uint64(len(data)) {
			t.Errorf("Validate of a %d-byte body with %d problems allocated %d bytes (%.1f per input byte), want at most 3 per byte",
				len(data), len(verr.Violations), a, float64(a)/float64(len(data)))
		}
	}
}

// TestProblemDocumentBoundedForAnyBody is the property behind
// TestProblemDocumentBounded: a
// body of at most 1 MiB, however hostile, gets a problem document of at
// most 64 KiB that is valid JSON. The bodies are random mixes of the
// parts that make problems and pointers long.
func TestProblemDocumentBoundedForAnyBody(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	names := []string{"<", `\"`, `\u0001`, "~", "/", "é", "\xff", `\ud800`, "a", "&"}
	bads := []string{"1e400", `"x"`, "[1e999]", "{}", "null", "true"}
	for i := range 60 {
		var b strings.Builder
		b.WriteString(`{"type":"Feature","geometry":{"type":"Point","coordinates":[1e400,1e400]},"properties":`)
		depth := rng.IntN(40)
		limit := 1<<10 + rng.IntN(1<<20-1<<11)
		for range depth {
			b.WriteString(`{"`)
			n := rng.IntN(limit / (depth + 1) / 6)
			for range n {
				b.WriteString(names[rng.IntN(len(names))])
			}
			b.WriteString(`":`)
		}
		b.WriteString(`[`)
		for k := 0; b.Len() < limit-200-2*depth; k++ {
			if k > 0 {
				b.WriteString(",")
			}
			b.WriteString(bads[rng.IntN(len(bads))])
		}
		b.WriteString(`]`)
		b.WriteString(strings.Repeat("}", depth))
		b.WriteString(`,"bbox":[1e400],"crs":7}`)
		data := []byte(b.String())
		if len(data) > 1<<20 {
			t.Fatalf("body %d: %d bytes, over 1 MiB", i, len(data))
		}
		doc := problemDocOf(t, data)
		if len(doc) > problemDocCap {
			t.Fatalf("body %d (%d bytes, depth %d): problem document of %d bytes, want at most %d", i, len(data), depth, len(doc), problemDocCap)
		}
		if !json.Valid(doc) {
			t.Fatalf("body %d: problem document is not JSON", i)
		}
	}
}

// FuzzProblemDocument checks the bound on any input: a problem document is
// at most maxProblemDocumentBytes of valid JSON with no HTML escapes.
//
//	go test -run '^$' -fuzz FuzzProblemDocument -fuzztime 60s ./geojson
func FuzzProblemDocument(f *testing.F) {
	addSeeds(f)
	f.Add(testkit.ProblemBomb(4<<10, 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc := problemDocOf(t, data)
		if doc == nil {
			return
		}
		if len(doc) > maxProblemDocumentBytes || !json.Valid(doc) {
			t.Fatalf("problem document of %d bytes (valid JSON: %v)", len(doc), json.Valid(doc))
		}
		if bytes.Contains(doc, []byte(`\u003c`)) || bytes.Contains(doc, []byte(`\u0026`)) {
			t.Fatalf("problem document HTML-escaped: %s", doc)
		}
	})
}

// TestLongEscapedNamePointer: a pointer built from a long name written
// with escapes is cut and marked like any other, and is a prefix of the
// real pointer.
func TestLongEscapedNamePointer(t *testing.T) {
	for _, esc := range []string{`\u003c`, `\ud83d\ude00`, `\/`, `a`} {
		name := strings.Repeat(esc, 2000)
		var decoded string
		if err := json.Unmarshal([]byte(`"`+name+`"`), &decoded); err != nil {
			t.Fatal(err)
		}
		real := "/properties/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(decoded) + "/0"
		err := Validate([]byte(`{"type":"Feature","geometry":null,"properties":{"`+name+`":[1e400]}}`), Options{})
		var verr *ValidationError
		if !errors.As(err, &verr) || len(verr.Violations) != 1 {
			t.Fatalf("%s: %v, want one problem", esc, err)
		}
		pr := verr.Violations[0]
		if !pr.Truncated || len(pr.Pointer) > maxPointerBytes || len(pr.Pointer) < maxPointerBytes-4 || !strings.HasPrefix(real, pr.Pointer) {
			t.Errorf("%s: pointer of %d bytes, truncated %v, prefix of the real one: %v; want a prefix of %d bytes, marked truncated",
				esc, len(pr.Pointer), pr.Truncated, strings.HasPrefix(real, pr.Pointer), maxPointerBytes)
		}
	}
}
