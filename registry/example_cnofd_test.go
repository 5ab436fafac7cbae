package registry_test

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
)

// A CNO with a file descriptor (dat_cno_fd_create) lets a program that
// already waits on descriptors in poll(2) or epoll(7) wait for DAT events
// in the same call: the descriptor is readable while the CNO holds a
// trigger, Triggered names the EVD that triggered it and resets the
// descriptor, and the events are then dequeued as usual.
func Example_cnoFD() {
	// exampleRegistry has one IA, "lo", of the loopback provider; Example
	// shows how a program makes one.
	ia, err := exampleRegistry.Open(context.Background(), "lo")
	check(err)
	defer ia.Close(api.CloseAbrupt)

	cno, fd, err := ia.CreateCNOFD()
	check(err)
	work, err := ia.CreateEVD(8, cno, api.EVDSoftware)
	check(err)
	control, err := ia.CreateEVD(8, cno, api.EVDSoftware)
	check(err)
	check(control.PostSE(&api.Event{Number: api.SoftwareEvent, Software: "stop"}))

	// The program's own descriptors would sit beside fd here.
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	_, err = unix.Poll(fds, -1)
	check(err)
	fmt.Println("descriptor readable:", fds[0].Revents&unix.POLLIN != 0)

	evd, err := cno.Triggered()
	check(err)
	fmt.Println("triggered by the control EVD:", evd == control, "the work EVD:", evd == work)
	var ev api.Event
	check(evd.Dequeue(&ev))
	fmt.Println("event:", ev.Software)

	_, err = unix.Poll(fds, 0)
	check(err)
	fmt.Println("descriptor readable after Triggered:", fds[0].Revents&unix.POLLIN != 0)
	// Output:
	// descriptor readable: true
	// triggered by the control EVD: true the work EVD: false
	// event: stop
	// descriptor readable after Triggered: false
}
