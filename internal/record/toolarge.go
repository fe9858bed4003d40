package record

import (
	"net/http"

	"github.com/geoidem/geoidem/problem"
)

// TooLarge is the record kept in place of a response larger than
// the caller records (the middleware's Config.MaxRecordBytes, a Hold's
// MaxRecordBytes): a response-not-recorded problem document under the
// response's own status, so that a retry learns the request ran, and how
// it ended, instead of running it again. Its encoding is at most
// [MinBytes] long for every status from 200 to 599.
func TooLarge(status int) Record {
	return Record{
		StatusCode: status,
		Header:     http.Header{"Content-Type": {problem.MediaType}, "Cache-Control": {"no-store"}},
		Body: problem.Details{Type: problem.TypeBase + "response-not-recorded", Title: "Response too large to replay", Status: status,
			Detail: "The request was executed once and answered with this status, but its response was larger than the middleware records, so it cannot be replayed."}.ProblemJSON(),
	}
}

// MinBytes is the least bound on a record that a caller may set
// (the middleware's Config.MaxRecordBytes): room for every record the
// middleware writes in place of a response (TooLarge and its kind),
// so that a store that reserves this much always has room for what is
// recorded.
const MinBytes = 1024
