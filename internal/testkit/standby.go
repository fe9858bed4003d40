// This file starts a private PostgreSQL 15 primary and a streaming
// standby on loopback, for the tests and benchmarks that promote the
// standby while clients write: [Start] runs initdb, starts the primary,
// copies it with pg_basebackup -R and starts the copy as a hot standby;
// [StandbyPair.StopPrimary] stops the primary (immediate: a crash), and
// [StandbyPair.Promote] promotes the standby with pg_ctl promote.
//
// Replication is asynchronous unless [StandbyOptions.Sync] is set: then the
// standby is the primary's synchronous standby (synchronous_standby_names),
// and a commit is acknowledged only once the standby has it, as
// [StandbyOptions.SynchronousCommit] says (on: flushed to its disk; remote_apply:
// applied, visible to its queries).
//
// The programs come from PostgreSQL 15's directory ([BinDir], or
// $GEOIDEM_PG_BIN). PostgreSQL refuses to run as root: when this process is
// root, they run as the postgres OS user (runuser -u postgres), and the
// temporary directory is handed to that user. [StandbyPair.Close] stops both
// servers and removes the directory.

package testkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// BinDir is where PostgreSQL 15's programs are, unless $GEOIDEM_PG_BIN
// says otherwise.
const BinDir = "/usr/lib/postgresql/15/bin"

// StandbyOptions configures a StandbyPair. The zero value is asynchronous replication.
type StandbyOptions struct {
	// Sync makes the standby the primary's synchronous standby.
	Sync bool
	// SynchronousCommit is the primary's synchronous_commit ("on",
	// "remote_apply", "remote_write", "local", "off"). Empty: "on".
	SynchronousCommit string
}

// A StandbyPair is a primary and its standby. Its methods are not safe for
// concurrent use.
type StandbyPair struct {
	dir                      string
	primary, standby         string // data directories
	primaryPort, standbyPort int
	owner                    *user.User // the OS user the servers run as; nil: this process's
	primaryUp, standbyUp     bool
}

// Start creates the primary, starts it, copies it into the standby and
// starts that, and waits until the primary reports the standby streaming
// (and, with Sync, synchronous).
func StartStandby(ctx context.Context, o StandbyOptions) (p *StandbyPair, err error) {
	if _, err := os.Stat(filepath.Join(binDir(), "initdb")); err != nil {
		return nil, fmt.Errorf("pgstandby: PostgreSQL 15 not installed (scripts/services installs it): %w", err)
	}
	p = &StandbyPair{}
	if os.Geteuid() == 0 {
		if p.owner, err = user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("pgstandby: running as root, and no postgres user to run PostgreSQL as: %w", err)
		}
	}
	if p.dir, err = os.MkdirTemp("", "geoidem-pgstandby-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if err := p.chown(p.dir); err != nil {
		return nil, err
	}
	p.primary, p.standby = filepath.Join(p.dir, "primary"), filepath.Join(p.dir, "standby")
	if p.primaryPort, err = freePort(); err != nil {
		return nil, err
	}
	if p.standbyPort, err = freePort(); err != nil {
		return nil, err
	}
	if err := p.run(ctx, "initdb", "-D", p.primary, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		return nil, err
	}
	commit := o.SynchronousCommit
	if commit == "" {
		commit = "on"
	}
	conf := []string{
		"listen_addresses = '127.0.0.1'",
		"port = " + strconv.Itoa(p.primaryPort),
		"unix_socket_directories = '" + p.dir + "'",
		"wal_level = replica",
		"max_wal_senders = 5",
		"wal_keep_size = '256MB'",
		"hot_standby = on",
		"max_connections = 60",
		"shared_buffers = '32MB'",
		"synchronous_commit = " + commit,
	}
	if o.Sync {
		conf = append(conf, "synchronous_standby_names = 'standby'")
	}
	if err := appendConf(p.primary, conf); err != nil {
		return nil, err
	}
	if err := p.pgctl(ctx, "start", p.primary); err != nil {
		return nil, err
	}
	p.primaryUp = true
	if err := p.run(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.primaryPort), "-U", "postgres",
		"-D", p.standby, "-R", "-X", "stream", "--no-sync"); err != nil {
		return nil, err
	}
	if err := appendConf(p.standby, []string{
		"port = " + strconv.Itoa(p.standbyPort),
		"synchronous_standby_names = ''", // once promoted, it has no standby to wait for
		fmt.Sprintf("primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=standby'", p.primaryPort),
	}); err != nil {
		return nil, err
	}
	if err := p.pgctl(ctx, "start", p.standby); err != nil {
		return nil, err
	}
	p.standbyUp = true
	want := "async"
	if o.Sync {
		want = "sync"
	}
	if err := p.waitFor(ctx, p.primaryPort, "SELECT state || ' ' || sync_state FROM pg_stat_replication WHERE application_name = 'standby'", "streaming "+want); err != nil {
		return nil, err
	}
	return p, nil
}

// PrimaryURL is the primary's connection string (database postgres, user
// postgres).
func (p *StandbyPair) PrimaryURL() string { return pgURL(p.primaryPort) }

// StandbyURL is the standby's connection string.
func (p *StandbyPair) StandbyURL() string { return pgURL(p.standbyPort) }

// URL lists both servers, the primary first, with
// target_session_attrs=read-write: pgx (v5) connects to whichever accepts
// writes, the primary before a promotion and the promoted standby after.
func (p *StandbyPair) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		p.primaryPort, p.standbyPort)
}

func pgURL(port int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
}

// StopPrimary stops the primary in mode "immediate" (no shutdown
// checkpoint, clients cut at once: what a crash looks like to them), "fast"
// or "smart".
func (p *StandbyPair) StopPrimary(ctx context.Context, mode string) error {
	if !p.primaryUp {
		return nil
	}
	p.primaryUp = false
	return p.pgctl(ctx, "stop", p.primary, "-m", mode)
}

// Promote promotes the standby (pg_ctl promote) and waits until it accepts
// writes.
func (p *StandbyPair) Promote(ctx context.Context) error {
	if err := p.pgctl(ctx, "promote", p.standby); err != nil {
		return err
	}
	return p.waitFor(ctx, p.standbyPort, "SELECT pg_is_in_recovery()::text", "false")
}

// Failover is an unplanned failover: StopPrimary immediate, then Promote.
func (p *StandbyPair) Failover(ctx context.Context) error {
	if err := p.StopPrimary(ctx, "immediate"); err != nil {
		return err
	}
	return p.Promote(ctx)
}

// Close stops both servers (immediate) and removes their directory.
func (p *StandbyPair) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if p.primaryUp {
		p.primaryUp = false
		_ = p.pgctl(ctx, "stop", p.primary, "-m", "immediate")
	}
	if p.standbyUp {
		p.standbyUp = false
		_ = p.pgctl(ctx, "stop", p.standby, "-m", "immediate")
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

// pgctl runs pg_ctl action on a data directory, waiting for it (-w), with
// the server's log in the directory.
func (p *StandbyPair) pgctl(ctx context.Context, action, dataDir string, args ...string) error {
	all := append([]string{action, "-D", dataDir, "-w", "-t", "60"}, args...)
	if action == "start" {
		all = append(all, "-l", dataDir+".log")
	}
	return p.run(ctx, "pg_ctl", all...)
}

// run runs one of PostgreSQL's programs, as the servers' owner.
func (p *StandbyPair) run(ctx context.Context, program string, args ...string) error {
	path := filepath.Join(binDir(), program)
	var cmd *exec.Cmd
	if p.owner != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", p.owner.Username, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = p.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "primary.log"))
		slog, _ := os.ReadFile(filepath.Join(p.dir, "standby.log"))
		return fmt.Errorf("pgstandby: %s %s: %w\n%s\nprimary log: %s\nstandby log: %s", program, strings.Join(args, " "), err, out, tail(log), tail(slog))
	}
	return nil
}

// waitFor runs query on the server at port through psql until it returns
// want, for up to 30 s.
func (p *StandbyPair) waitFor(ctx context.Context, port int, query, want string) error {
	deadline := time.Now().Add(30 * time.Second)
	var got string
	var err error
	for {
		got, err = p.psql(ctx, port, query)
		if err == nil && got == want {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("pgstandby: %q on port %d returned %q, not %q, for 30 s: %v", query, port, got, want, errors.Join(err, ctx.Err()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// psql runs one query on the server at port and returns its output,
// unaligned and without headers.
func (p *StandbyPair) psql(ctx context.Context, port int, query string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir(), "psql"), "-X", "-At", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "-d", "postgres", "-c", query)
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// chown hands dir to the servers' owner.
func (p *StandbyPair) chown(dir string) error {
	if p.owner == nil {
		return nil
	}
	uid, _ := strconv.Atoi(p.owner.Uid)
	gid, _ := strconv.Atoi(p.owner.Gid)
	return os.Chown(dir, uid, gid)
}

// appendConf appends lines to a data directory's postgresql.auto.conf,
// which is read last, so they override what is set before them.
func appendConf(dataDir string, lines []string) error {
	f, err := os.OpenFile(filepath.Join(dataDir, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	return errors.Join(err, f.Close())
}

func binDir() string {
	if d := os.Getenv("GEOIDEM_PG_BIN"); d != "" {
		return d
	}
	return BinDir
}

// freePort returns a loopback port that is free at the time of the call.
