package middleware

import "testing"

func TestBodyClass(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want int
	}{{-1, -1}, {0, 0}, {1, 0}, {1 << 10, 0}, {1<<10 + 1, 1}, {4 << 10, 1}, {16 << 10, 2}, {16<<10 + 1, 3}, {64 << 10, 3}, {64<<10 + 1, -1}} {
		if got := bodyClass(c.n); got != c.want {
			t.Errorf("bodyClass(%d) = %d, want %d", c.n, got, c.want)
		}
		if c.want >= 0 {
			if size := int64(minPooledBody) << (2 * c.want); size < c.n || bodyClass(size) != c.want {
				t.Errorf("class %d of %d bytes: size %d", c.want, c.n, size)
			}
		}
	}
}
