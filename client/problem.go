package client

import (
	"bytes"
	"encoding/json"
	"mime"
)

// ProblemMediaType is the media type of an RFC 9457 problem document.
const ProblemMediaType = "application/problem+json"

// Problem is an RFC 9457 problem details document. Members with the wrong
// JSON type are ignored, as RFC 9457 requires; a missing type is
// "about:blank". Every other member is kept, undecoded, in Extensions (the
// geoidem middleware puts its list of GeoJSON problems there).
type Problem struct {
	Type       string                     `json:"type"`
	Title      string                     `json:"title,omitempty"`
	Status     int                        `json:"status,omitempty"`
	Detail     string                     `json:"detail,omitempty"`
	Instance   string                     `json:"instance,omitempty"`
	Extensions map[string]json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes a problem document; it fails only when data is not
// a JSON object.
func (p *Problem) UnmarshalJSON(data []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return err
	}
	*p = Problem{Type: "about:blank"}
	// A standard member of the wrong type is ignored (RFC 9457, section 3.1).
	for name, raw := range members {
		switch name {
		case "type":
			decodeMember(raw, &p.Type)
		case "title":
			decodeMember(raw, &p.Title)
		case "status":
			decodeMember(raw, &p.Status)
		case "detail":
			decodeMember(raw, &p.Detail)
		case "instance":
			decodeMember(raw, &p.Instance)
		default:
			if p.Extensions == nil {
				p.Extensions = make(map[string]json.RawMessage)
			}
			p.Extensions[name] = raw
		}
	}
	if p.Type == "" {
		p.Type = "about:blank"
	}
	return nil
}

// MarshalJSON encodes the standard members and the extensions in one object.
func (p Problem) MarshalJSON() ([]byte, error) {
	members := make(map[string]any, len(p.Extensions)+5)
	for name, raw := range p.Extensions {
		members[name] = raw
	}
	members["type"] = p.Type
	if p.Title != "" {
		members["title"] = p.Title
	}
	if p.Status != 0 {
		members["status"] = p.Status
	}
	if p.Detail != "" {
		members["detail"] = p.Detail
	}
	if p.Instance != "" {
		members["instance"] = p.Instance
	}
	return json.Marshal(members)
}

// decodeMember decodes raw into v, leaving v alone when the type does not
// match.
func decodeMember[T any](raw json.RawMessage, v *T) {
	var tmp T
	if json.Unmarshal(raw, &tmp) == nil {
		*v = tmp
	}
}

// parseProblem returns the problem document of a response, or nil when the
// content type is not application/problem+json or the body is not a JSON
// object.
func parseProblem(contentType string, body []byte) *Problem {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt != ProblemMediaType {
		return nil
	}
	body = bytes.TrimSpace(body)
	var p Problem
	if err := json.Unmarshal(body, &p); err != nil {
		return nil
	}
	return &p
}
