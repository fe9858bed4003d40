package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// missingFeatures returns the ids of the acknowledged events whose feature
// GET base/features/{id} does not find (404): acknowledged, effect missing.
func missingFeatures(ctx context.Context, base string, evs []event, acked *acks) ([]string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	var missing []string
	for _, e := range evs {
		if e.id == "" || !acked.has(e.key) {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/features/"+url.PathEscape(e.id), nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusNotFound:
			missing = append(missing, e.id)
		default:
			return nil, fmt.Errorf("GET /features/%s: %s", e.id, resp.Status)
		}
	}
	return missing, nil
}
