package ingest

import "github.com/geoidem/geoidem/keystore"

// Admin returns the key store's keystore.Admin (every store the service
// opens has it), for an operator's listener: see keystore/adminhttp.
func (s *Service) Admin() (keystore.Admin, bool) {
	a, ok := s.backend.store.(keystore.Admin)
	return a, ok
}
