module github.com/godat/godat

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
