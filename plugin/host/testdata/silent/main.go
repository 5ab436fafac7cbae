// Command silent never completes the handshake: the host must give up
// after its start timeout and kill it.
package main

import "time"

func main() {
	time.Sleep(time.Hour)
}
