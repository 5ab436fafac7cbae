//go:build cabi

// Command cabi is godat's C ABI: built with -buildmode=c-shared (./cabi/build)
// it is a libdat2.so.2 that existing uDAPL C programs load in place of OFA
// DAPL's, and a provider library that OFA's own libdat2 can load from its
// dat.conf. Either way the calls reach the IAs of godat's configuration
// through the registry, its guard and the providers, exactly as a Go
// program's calls do.
//
// The C layer (shim.c) has one function per slot of OFA's struct
// dat_provider; the dat_* symbols the library exports (version DAT_2.0,
// libdat2.map) are aliases of the same functions. Everything else is Go:
// handles, marshalling of the structures of <dat2/udat.h>, and the
// compatibility rules docs/cabi.md lists.
//
// # Handles
//
// A handle is the address of a 16-byte slot in one fixed mapping whose
// first word is the provider table. A call checks that the address lies in
// the mapping, on a slot boundary, and that the slot holds an object of the
// kind the call takes, before it touches anything: a wrong or stale handle
// is DAT_INVALID_HANDLE, never a fault. Freed slots are reused last-in-last
// so a stale handle rarely names a new object.
//
// # Memory the C program is given
//
// Pointers the library hands out stay valid as long as the object they
// describe: the IA's address (dat_ia_query) and its attribute strings until
// dat_ia_close; an EP's addresses and the private data of its connection
// events until dat_ep_free; a CR's address and private data (writable, as
// dtest edits it in place) until the CR is accepted, rejected or handed off.
//
// The package builds only with the tag cabi, because it needs the DAT
// headers of libdapl-dev (/usr/include/dat2).
package main

func main() {}
