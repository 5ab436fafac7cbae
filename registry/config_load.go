package registry

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/godat/godat/api"
)

// SystemConfigPath is the system-wide configuration file that LoadConfig
// reads when neither its caller nor $DAT_OVERRIDE names one. A packager can
// change it at link time (go build -ldflags
// "-X github.com/godat/godat/registry.SystemConfigPath=/etc/dat/dat.conf");
// tests may change it before any configuration is loaded. It must not be
// changed while LoadConfig runs.
var SystemConfigPath = "/etc/dat.conf"

// EnvOverride is the environment variable that names a configuration file
// (the variable the reference DAT registry reads).
const EnvOverride = "DAT_OVERRIDE"

// EmbeddedConfigName is the File of the embedded default configuration.
const EmbeddedConfigName = "<embedded>"

//go:embed default.conf
var defaultConf []byte

var (
	embeddedOnce sync.Once
	embeddedCfg  *Config
)

// EmbeddedConfig returns the configuration built into godat, which
// LoadConfig falls back to when no file is found and whose IAs it adds
// after a file's own (see LoadConfig): the loopback IA, marked default,
// and tcp on 127.0.0.1, each with BuiltIn set. Its File is "<embedded>",
// its Format and Source "embedded". Each call returns a new copy that the
// caller may modify.
func EmbeddedConfig() *Config {
	embeddedOnce.Do(func() {
		cfg, err := ParseConfig(EmbeddedConfigName, defaultConf)
		if err != nil {
			// default.conf is part of the source; a test parses it.
			panic("registry: the embedded default.conf is invalid: " + err.Error())
		}
		cfg.Format, cfg.Source = FormatEmbedded, FormatEmbedded
		for i := range cfg.IAs {
			cfg.IAs[i].BuiltIn = true
		}
		embeddedCfg = cfg
	})
	c := *embeddedCfg
	c.IAs = append([]IAEntry(nil), embeddedCfg.IAs...)
	return &c
}

// LoadConfig finds and parses the configuration, in this order (DESIGN §6):
//
//  1. path, when it is not empty;
//  2. else the file $DAT_OVERRIDE names, when the variable is set and not
//     empty;
//  3. else SystemConfigPath (/etc/dat.conf), when it exists;
//  4. else the embedded default (EmbeddedConfig).
//
// The IAs of a file come first, in file order; then each built-in IA of
// EmbeddedConfig whose name the file does not define, with BuiltIn set
// and not marked default. So loopback and tcp can be opened by name next
// to any file, in either form, including the /etc/dat.conf of a uDAPL
// installation; a file that defines one of these names replaces it.
//
// A file named by path or $DAT_OVERRIDE must exist and be readable:
// LoadConfig never falls back silently from a file the user asked for.
// The errors, each an *api.Error wrapping the system error if any:
//
//   - a named file that does not exist is ProviderNotFound
//     (DAT_NAME_NOT_REGISTERED): with no registry file, no IA name is
//     registered, which is what dat_ia_open(3DAT) answers for a name the
//     registry lacks;
//   - a file that is not a regular file (a directory, a FIFO, a device)
//     is InvalidParameter, found without reading it or waiting on it;
//   - a file larger than MaxConfigSize is InvalidParameter with a
//     ConfigErrors Cause at file:1:1 that gives the file's real size, and
//     an invalid file ParseConfig's InvalidParameter error;
//   - any other failure to read (permissions, I/O) is InternalError.
//
// The same holds for an /etc/dat.conf that exists. The returned Config's
// Source says which step chose it.
func LoadConfig(path string) (*Config, error) {
	source := "argument"
	if path == "" {
		if env := os.Getenv(EnvOverride); env != "" {
			path, source = env, EnvOverride
		}
	}
	if path == "" {
		data, err := readConfigFile(SystemConfigPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return EmbeddedConfig(), nil
		case err != nil:
			return nil, unreadable(SystemConfigPath, "the system configuration", err)
		}
		return parseLoaded(SystemConfigPath, "system", data)
	}
	data, err := readConfigFile(path)
	if err != nil {
		what := "the configuration file"
		if source == EnvOverride {
			what = "the configuration file named by $" + EnvOverride
		}
		return nil, unreadable(path, what, err)
	}
	return parseLoaded(path, source, data)
}

// errNotRegular is the cause of a configuration path that names something
// other than a regular file.
type errNotRegular struct{ kind string }

func (e errNotRegular) Error() string { return "it is " + e.kind + "; expected a regular file" }

func parseLoaded(path, source string, data []byte) (*Config, error) {
	cfg, err := ParseConfig(path, data)
	if err != nil {
		return nil, err
	}
	cfg.Source = source
	addBuiltIns(cfg)
	return cfg, nil
}

// addBuiltIns appends the built-in IAs whose names cfg does not define.
// They are never cfg's default: the file's choice of default stands.
func addBuiltIns(cfg *Config) {
	for _, b := range EmbeddedConfig().IAs {
		if slices.ContainsFunc(cfg.IAs, func(e IAEntry) bool { return e.Name == b.Name }) {
			continue
		}
		b.Default = false
		cfg.IAs = append(cfg.IAs, b)
	}
}

// readConfigFile reads path, a regular file of at most MaxConfigSize
// bytes. It opens the file without blocking (a FIFO would otherwise wait
// for a writer) and looks at what it opened before reading anything: a
// file of another kind is errNotRegular, and a file over the limit is
// tooLarge's error with the size the file has. At most MaxConfigSize+1
// bytes are read, so that a file that grows meanwhile is never read whole.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errNotRegular{fileKind(st.Mode())}
	}
	if st.Size() > MaxConfigSize {
		return nil, tooLarge(path, strconv.FormatInt(st.Size(), 10))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err == nil && len(data) > MaxConfigSize {
		err = tooLarge(path, "more than "+strconv.Itoa(MaxConfigSize))
	}
	return data, err
}

// fileKind names the kind of file of mode m, which is not a regular file.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}

// unreadable is the error of a configuration file that LoadConfig cannot
// use (see LoadConfig for the types).
func unreadable(path, what string, err error) error {
	var (
		de *api.Error
		nr errNotRegular
	)
	switch {
	case errors.As(err, &de):
		return de // readConfigFile's own: the file is too large
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return &api.Error{Type: api.ProviderNotFound, Sub: api.SubNameNotRegistered,
			Msg: fmt.Sprintf("%s %s does not exist, so no IA is registered", what, path), Cause: err}
	case errors.As(err, &nr):
		return &api.Error{Type: api.InvalidParameter, Msg: fmt.Sprintf("%s %s cannot be used: %v", what, path, nr)}
	}
	return &api.Error{Type: api.InternalError, Msg: fmt.Sprintf("cannot read %s %s", what, path), Cause: err}
}
