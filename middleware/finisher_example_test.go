package middleware_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

func ExampleMiddleware_Shutdown() {
	idem, err := middleware.New(new(memstore.Store), middleware.Config{})
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Addr: "127.0.0.1:0", Handler: idem.Handler(http.NotFoundHandler())}
	// … srv.ListenAndServe() in a goroutine, until SIGTERM …

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// First stop taking requests, then wait for the records and releases
	// still being retried in the background after a store failure.
	if err := srv.Shutdown(ctx); err != nil {
		fmt.Println("server:", err)
	}
	if err := idem.Shutdown(ctx); err != nil {
		fmt.Println("idempotency records still pending:", err)
	}
	fmt.Println("stopped")
	// Output: stopped
}
