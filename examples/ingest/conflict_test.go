package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// A feature that PostgreSQL refuses for the state of other rows (here a
// foreign key to a registry a later delivery fills: deliveries arrive out
// of order) is no input that can never succeed: it is answered 409
// feature-conflict with Retry-After, nothing recorded, and the same
// request, same key, is stored once the other row is there.
func TestIngestConflictWithOtherRowsIsReleased(t *testing.T) {
	url, table, conn := pgService(t)
	ctx := context.Background()
	registry := table + "_registry"
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), `DROP TABLE IF EXISTS `+registry+` CASCADE`) })
	if _, err := conn.Exec(ctx, `CREATE TABLE `+registry+` (id text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE `+table+` ADD CONSTRAINT registered FOREIGN KEY (id) REFERENCES `+registry+` (id)`); err != nil {
		t.Fatal(err)
	}
	body := `{"type":"FeatureCollection","features":[` +
		`{"type":"Feature","id":"pump-7","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}]}`
	r, b := do(t, http.MethodPost, url+"/features", "conflict", body)
	d := answerProblem(t, r, b)
	if r.StatusCode != http.StatusConflict || d.Name() != "feature-conflict" || r.Header.Get("Retry-After") == "" ||
		len(d.Errors) != 1 || d.Errors[0].Pointer != "/features/0" || !strings.Contains(d.Errors[0].Detail, "23503") {
		t.Fatalf("%d Retry-After %q %s; want 409 feature-conflict with Retry-After, naming /features/0 and SQLSTATE 23503",
			r.StatusCode, r.Header.Get("Retry-After"), b)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO `+registry+` VALUES ('pump-7')`); err != nil {
		t.Fatal(err)
	}
	again, b2 := do(t, http.MethodPost, url+"/features", "conflict", body)
	if again.StatusCode/100 != 2 || again.Header.Get("Idempotent-Replayed") == "true" {
		t.Fatalf("the same request once the registry has the id: %d replayed=%q %s; want it stored", again.StatusCode, again.Header.Get("Idempotent-Replayed"), b2)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows (%v), want the feature", n, err)
	}
}
