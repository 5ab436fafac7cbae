// Command exitearly exits before the handshake, as a broken plugin would.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "exitearly: cannot find my device")
	os.Exit(1)
}
