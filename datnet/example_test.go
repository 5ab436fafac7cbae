package datnet_test

import (
	"context"
	"fmt"
	"io"
	"log"

	"github.com/godat/godat/api"
	"github.com/godat/godat/datnet"
	"github.com/godat/godat/registry"
)

// A stream between two IAs of the in-process loopback provider; with a
// "tcp" or verbs IA the same calls connect processes or hosts.
func Example() {
	ctx := context.Background()
	cfg, err := registry.ParseConfig("example.conf", []byte(`
[[ia]]
name        = "lo"
provider    = "loopback"
api_version = "u2.0"
`))
	if err != nil {
		log.Fatal(err)
	}
	reg := registry.New(cfg)
	srvIA, err := reg.Open(ctx, "lo")
	if err != nil {
		log.Fatal(err)
	}
	defer srvIA.Close(api.CloseGraceful)
	cliIA, err := reg.Open(ctx, "lo")
	if err != nil {
		log.Fatal(err)
	}
	defer cliIA.Close(api.CloseGraceful)

	l, err := datnet.Listen(srvIA, ":0") // a free connection qualifier
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c) // echo until the client's CloseWrite
	}()

	c, err := datnet.Dial(ctx, cliIA, l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "hello over DAT")
	c.(*datnet.Conn).CloseWrite()
	reply, err := io.ReadAll(c)
	fmt.Printf("%q %v\n", reply, err)
	// Output: "hello over DAT" <nil>
}
