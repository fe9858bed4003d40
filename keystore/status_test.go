package keystore_test

import (
	"errors"
	"testing"

	"github.com/geoidem/geoidem/keystore"
)

func TestRecordValidate(t *testing.T) {
	for code, ok := range map[int]bool{
		0: false, -200: false, 100: false, 101: false, 199: false,
		200: true, 201: true, 422: true, 599: true,
		600: false, 999: false, 1 << 20: false,
	} {
		err := keystore.Record{StatusCode: code}.Validate()
		if ok && err != nil {
			t.Errorf("Validate of status %d: %v, want nil", code, err)
		}
		if !ok && !errors.Is(err, keystore.ErrInvalidStatus) {
			t.Errorf("Validate of status %d: err = %v, want one wrapping ErrInvalidStatus", code, err)
		}
	}
}
