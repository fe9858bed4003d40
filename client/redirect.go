package client

import (
	"errors"
	"net/http"

	"github.com/geoidem/geoidem/internal/answer"
)

// maxRedirects is net/http's default limit on the redirects one request
// follows.
const maxRedirects = 10

// markRedirects returns a copy of hc whose redirect policy (hc's
// CheckRedirect, or net/http's default of at most 10 redirects) marks its
// refusals, so that the sender knows them for permanent: the same request
// meets the same redirects again. hc itself is left as it is.
func markRedirects(hc *http.Client) *http.Client {
	c := *hc
	check := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		var err error
		switch {
		case check != nil:
			err = check(req, via)
		case len(via) >= maxRedirects:
			err = errors.New("stopped after 10 redirects")
		}
		if err != nil && !errors.Is(err, http.ErrUseLastResponse) {
			return &answer.RedirectError{Err: err}
		}
		return err
	}
	return &c
}
