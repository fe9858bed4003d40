package observe

// All returns a callback that calls each non-nil fn in order with its
// argument: one middleware.Config.Observer or StoreObserver feeding
// several observers. Each fn must be fast and safe for concurrent use, as
// the callback it joins must be.
func All[E any](fns ...func(E)) func(E) {
	var set []func(E)
	for _, fn := range fns {
		if fn != nil {
			set = append(set, fn)
		}
	}
	return func(e E) {
		for _, fn := range set {
			fn(e)
		}
	}
}
