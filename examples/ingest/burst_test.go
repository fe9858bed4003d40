package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

var (
	burst     = flag.Bool("burst", false, "run TestBurstResidentMemory: 140 hole-heavy 1 MiB bodies at once against the command (about 30 s, up to 2 GB without a bound)")
	burstArgs = flag.String("burst-args", "", "extra flags for the command under TestBurstResidentMemory, space-separated (-max-in-flight=-1 shows it unbounded)")
)

// TestBurstResidentMemory releases 140 hole-heavy bodies of about 1 MiB
// together, 4 from each of 35 loopback addresses, against the command with
// its defaults, while a small sender on another address posts one feature
// after another. The command's peak resident memory (VmHWM) stays under
// 512 MB and the small sender meets no 503. Run it with
//
//	go test ./examples/ingest -run TestBurstResidentMemory -burst -v
func TestBurstResidentMemory(t *testing.T) {
	if !*burst {
		t.Skip("run with -burst (a load test of about 30 s)")
	}
	args := append([]string{"-addr", "127.0.0.1:0"}, strings.Fields(*burstArgs)...)
	cmd := exec.Command(ingestBinary(t), args...)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatal("no output")
	}
	m := servingRE.FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("first line %q does not name the URL", sc.Text())
	}
	url := m[1]
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	holes := testkit.Holes(19_500)
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[string]int{}
	start := make(chan struct{})
	began := time.Now()
	for c := range 35 {
		client := loopbackClient(fmt.Sprintf("127.0.1.%d", c+1))
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				code, err := postBody(client, url, fmt.Sprintf("burst-%d-%d", c, i), holes)
				k := strconv.Itoa(code)
				if err != nil {
					k = "error"
				}
				mu.Lock()
				statuses[k]++
				mu.Unlock()
			}()
		}
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	small := loopbackClient("127.0.0.2")
	smallStatuses := map[int]int{}
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			if i < 10_000 {
				body := `{"type":"Feature","id":"s` + strconv.Itoa(i) + `","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}`
				code, err := postBody(small, url, "small-"+strconv.Itoa(i), []byte(body))
				if err != nil {
					t.Errorf("small sender: %v", err)
				}
				smallStatuses[code]++
				continue
			}
		}
		break
	}
	<-done
	took := time.Since(began)
	hwm := residentPeak(t, cmd.Process.Pid)
	t.Logf("args %q: 140 bodies of %d bytes in %v: %v; peak resident %d MB; small sender %v", *burstArgs, len(holes), took.Round(time.Millisecond), statuses, hwm>>20, smallStatuses)
	if hwm >= 512<<20 {
		t.Errorf("peak resident memory %d MB, want under 512 MB", hwm>>20)
	}
	if n := smallStatuses[http.StatusServiceUnavailable]; n > 0 || smallStatuses[http.StatusCreated] == 0 {
		t.Errorf("the small sender got %v, want 201 every time", smallStatuses)
	}
}

// residentPeak returns the peak resident memory of process pid (VmHWM).
func residentPeak(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/pid/status")
	return 0
}

// loopbackClient returns an HTTP client whose connections come from the
// loopback address ip: a client of its own to the command's admission.
func loopbackClient(ip string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: dialerFrom(ip).DialContext}, Timeout: 2 * time.Minute}
}

func postBody(c *http.Client, url, key string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/features", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/geo+json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
