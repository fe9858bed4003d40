package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// A section is one numbered part of the report, filled by its run function.
type section struct {
	o         *options
	name      string // the -only name
	title     string
	md        strings.Builder
	headlines []headline
	goals     *goalBook // the run's, shared by its sections
}

// A headline is one row of the summary at the top of the report.
type headline struct{ what, value string }

// line appends one line of Markdown.
func (s *section) line(format string, args ...any) {
	fmt.Fprintf(&s.md, format, args...)
	s.md.WriteByte('\n')
}

// goal adds a row to the run's table of performance goals.
func (s *section) goal(g goalRow) { s.goals.add(s.name, g) }

func (s *section) headline(what, format string, args ...any) {
	s.headlines = append(s.headlines, headline{what, fmt.Sprintf(format, args...)})
}

// figure writes an SVG into the output directory and links it from the
// section, with the command that produced it.
func (s *section) figure(file, alt string, svg []byte) error {
	if err := os.WriteFile(filepath.Join(s.o.out, file), svg, 0o644); err != nil {
		return err
	}
	s.line("")
	s.line("![%s](%s)", alt, file)
	s.line("")
	s.line("*Figure `%s`: produced by `%s` (on its own: `go run ./bench -only %s`).*", file, s.o.command, s.name)
	s.line("")
	return nil
}

// table appends a Markdown table.
func (s *section) table(header []string, rows [][]string) {
	s.line("| %s |", strings.Join(header, " | "))
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
		if i > 0 {
			seps[i] = "---:"
		}
	}
	s.line("| %s |", strings.Join(seps, " | "))
	for _, r := range rows {
		s.line("| %s |", strings.Join(r, " | "))
	}
	s.line("")
}

type sectionFunc func(ctx context.Context, s *section) error

var sections = []struct {
	name, title string
	run         sectionFunc
}{
	{"http", "1. Middleware cost over loopback HTTP", runHTTP},
	{"storm", "2. Duplicate storm", runStorm},
	{"validate", "3. Validation throughput", runValidate},
	{"occ", "4. Retry storms, reproduced (AWS \"Exponential Backoff And Jitter\")", runOCC},
	{"outage", "5. Webhook outage and recovery", runOutage},
	{"hostile", "6. Hostile inputs", runHostile},
	{"faults", "7. Store faults", runFaults},
	{"journal", "8. Sender journal against the disk's fsync", runJournal},
	{"frontdoor", "9. Front door: slow bodies and idle connections", runFrontdoor},
	{"retention", "10. Retention at scale", runRetention},
	{"clustered", "11. Clustered stores: many receivers, one store", runTopology},
	{"proxy", "12. geoidem proxy against httputil.ReverseProxy, before an aiohttp receiver", runProxy},
}

// environment describes the machine and the moment of a run.
type environment struct {
	start, end     time.Time
	cpu            string
	loadStart      [3]float64
	loadEnd        [3]float64
	numCPU, procs  int
	goVersion      string
	goos, goarch   string
	loadedAtStart  bool
	loadedAtFinish bool
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAvg reads the 1, 5 and 15 minute load averages (zeros off Linux).
func loadAvg() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	for i, f := range strings.Fields(string(b)) {
		if i >= 3 {
			break
		}
		l[i], _ = strconv.ParseFloat(f, 64)
	}
	return l
}

// A machine is loaded when its 1-minute load average exceeds its CPUs: other
// processes then compete with the measurements for the processors.
func loaded(l [3]float64) bool { return l[0] > float64(runtime.NumCPU()) }

type report struct {
	path   string
	failed []string
}

// run runs the selected sections and writes the report. A section that
// fails is reported as such in REPORT.md and named in report.failed; run's
// own error is for a report that could not be written at all.
func run(ctx context.Context, o *options) (*report, error) {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	env := environment{
		start: time.Now().UTC(), cpu: cpuModel(), loadStart: loadAvg(),
		numCPU: runtime.NumCPU(), procs: runtime.GOMAXPROCS(0), goVersion: runtime.Version(),
		goos: runtime.GOOS, goarch: runtime.GOARCH,
	}
	env.loadedAtStart = loaded(env.loadStart)
	rep := &report{path: filepath.Join(o.out, "REPORT.md")}
	var done []*section
	goals := &goalBook{}
	for _, def := range sections {
		if !o.wants(def.name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := &section{o: o, name: def.name, title: def.title, goals: goals}
		o.logf("section %s", def.name)
		t0 := time.Now()
		err := def.run(ctx, s)
		if err != nil {
			var na notAvailable
			if errors.As(err, &na) {
				s.line("**Not available:** %s", na.reason)
			} else {
				s.line("**FAILED:** %v", err)
			}
			rep.failed = append(rep.failed, def.name)
			o.logf("section %s: %v", def.name, err)
		}
		s.line("")
		s.line("*Section time: %.1f s.*", time.Since(t0).Seconds())
		done = append(done, s)
	}
	env.end, env.loadEnd = time.Now().UTC(), loadAvg()
	env.loadedAtFinish = loaded(env.loadEnd)
	return rep, os.WriteFile(rep.path, []byte(compose(o, env, done, goals)), 0o644)
}

// notAvailable is the error of a section that could not run here.
type notAvailable struct{ reason string }

func (n notAvailable) Error() string { return "not available: " + n.reason }

func compose(o *options, env environment, done []*section, goals *goalBook) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# geoidem benchmark report")
	p("")
	p("Generated by `%s` (`go run ./bench -h` lists the flags). Every figure and table below comes from this one run.", o.command)
	p("")
	p("| | |")
	p("| --- | --- |")
	p("| date | %s, %.0f s |", env.start.Format("2006-01-02 15:04 MST"), env.end.Sub(env.start).Seconds())
	p("| machine | %s, runtime.NumCPU %d, GOMAXPROCS %d, %s/%s |", env.cpu, env.numCPU, env.procs, env.goos, env.goarch)
	p("| Go | %s |", env.goVersion)
	p("| load average (1/5/15 min) | %.2f / %.2f / %.2f at the start, %.2f / %.2f / %.2f at the end |",
		env.loadStart[0], env.loadStart[1], env.loadStart[2], env.loadEnd[0], env.loadEnd[1], env.loadEnd[2])
	mode := "full"
	if o.quick {
		mode = "quick (-quick: smaller sizes; not for quoting)"
	}
	p("| mode | %s |", mode)
	p("")
	if env.loadedAtStart || env.loadedAtFinish {
		p("> **The machine was loaded** during this run: its 1-minute load average (%.1f at the start, %.1f at the end) exceeded its %d CPUs,", env.loadStart[0], env.loadEnd[0], env.numCPU)
		p("> because other processes shared it (other engineers' builds and tests, or the compilation `go run` does just before the run).")
		p("> Absolute throughputs and latencies of sections 1 to 3")
		p("> are therefore lower and noisier than on an idle machine; the ratios compare measurements taken minutes apart under the same load,")
		p("> and the simulations (sections 4 and 5) run in virtual time and are unaffected.")
		p("")
	}
	p("## Summary")
	p("")
	p("| headline | measured in this run |")
	p("| --- | --- |")
	for _, s := range done {
		for _, h := range s.headlines {
			p("| %s | %s |", h.what, h.value)
		}
	}
	p("")
	b.WriteString(goals.markdown(o.command))
	for _, s := range done {
		p("## %s", s.title)
		p("")
		b.WriteString(s.md.String())
		p("")
	}
	return b.String()
}
