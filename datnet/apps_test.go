package datnet_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/godat/godat/datnet"
)

// net/http serves and fetches across a stream: requests with bodies in
// both directions, on a kept-alive connection.
func TestHTTP(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		p := mustPipe(t, open, datnet.Options{})
		// The server takes the listener; its first pair stays idle.
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s %d %x", r.Method, r.URL.Path, len(body), sum(body))
		})}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(p.l) }()
		client := &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return datnet.Dial(ctx, p.ias[1], p.l.Addr().String())
			},
		}}
		defer client.CloseIdleConnections()
		for i, size := range []int{0, 10, 1 << 20} {
			body := bytes.Repeat([]byte{byte(i + 1)}, size)
			resp, err := client.Post(fmt.Sprintf("http://datnet/upload/%d", i), "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := fmt.Sprintf("POST /upload/%d %d %x", i, size, sum(body))
			if err != nil || string(got) != want {
				t.Fatalf("response %q, %v; want %q", got, err, want)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Fatalf("Serve: %v", err)
		}
		p.l = nil // Shutdown closed it
	})
}

func sum(b []byte) uint32 {
	var s uint32
	for _, c := range b {
		s = s*31 + uint32(c)
	}
	return s
}

// gRPC runs a unary call and a server stream across a stream.
func TestGRPC(t *testing.T) {
	eachProvider(t, func(t *testing.T, open opener) {
		p := mustPipe(t, open, datnet.Options{})
		s := grpc.NewServer()
		hs := health.NewServer()
		healthpb.RegisterHealthServer(s, hs)
		served := make(chan error, 1)
		go func() { served <- s.Serve(p.l) }()
		defer func() {
			s.Stop()
			<-served
			p.l = nil // Stop closed it
		}()

		cc, err := grpc.Dial("passthrough:///datnet",
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
				return datnet.Dial(ctx, p.ias[1], p.l.Addr().String())
			}))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := healthpb.NewHealthClient(cc)
		hs.SetServingStatus("db", healthpb.HealthCheckResponse_SERVING)
		r, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: "db"})
		if err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Check: %v, %v", r, err)
		}
		w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{Service: "db"})
		if err != nil {
			t.Fatal(err)
		}
		want := []healthpb.HealthCheckResponse_ServingStatus{
			healthpb.HealthCheckResponse_SERVING,
			healthpb.HealthCheckResponse_NOT_SERVING,
			healthpb.HealthCheckResponse_SERVING,
		}
		for i, st := range want {
			if i > 0 {
				hs.SetServingStatus("db", st)
			}
			r, err := w.Recv()
			if err != nil || r.Status != st {
				t.Fatalf("stream message %d: %v, %v; want %v", i, r, err, st)
			}
		}
	})
}
