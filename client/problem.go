package client

import "github.com/geoidem/geoidem/problem"

// parseProblem returns the problem document of a response (see package
// problem: the one document type geoidem writes and reads), or nil when the
// content type is not application/problem+json or the body is not a JSON
// object.
func parseProblem(contentType string, body []byte) *problem.Details {
	d, ok := problem.Parse(contentType, body)
	if !ok {
		return nil
	}
	return &d
}
