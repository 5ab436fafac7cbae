package registry

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"

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
// A file named by path or $DAT_OVERRIDE must be readable: LoadConfig never
// falls back silently from a file the user asked for. An unreadable file is
// an *api.Error of type InternalError (dat_registry_list_providers(3DAT):
// the static registry is missing) wrapping the system error; a file larger
// than MaxConfigSize, or an invalid one, is ParseConfig's InvalidParameter
// error. The returned Config's Source says which step chose it.
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

// readConfigFile reads at most MaxConfigSize+1 bytes of path, so that an
// oversized file is rejected by ParseConfig without being read whole.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("is a directory")}
	}
	return io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
}

func unreadable(path, what string, err error) error {
	return &api.Error{Type: api.InternalError, Msg: fmt.Sprintf("cannot read %s %s", what, path), Cause: err}
}
