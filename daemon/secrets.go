package daemon

import (
	"sync/atomic"

	"github.com/batchhook/batchhook/config"
)

// heldSecrets holds the current value of each secret that SIGHUP reloads
// (config.Secrets with Reload), by name. A value is swapped whole on
// reload, and readers load it per use.
type heldSecrets map[string]*atomic.Pointer[config.Secret]

// holdSecrets takes the reloadable secrets of cfg, each as the daemon
// uses it (after its Key).
func holdSecrets(cfg *config.Config) heldSecrets {
	h := heldSecrets{}
	for _, s := range config.Secrets {
		if !s.Reload {
			continue
		}
		v := s.Value(cfg)
		if s.Key != nil {
			v, _ = s.Key(v) // checked by Validate when the secret is in use
		}
		p := new(atomic.Pointer[config.Secret])
		p.Store(&v)
		h[s.Name] = p
	}
	return h
}

// current returns a reader of the named secret's current value. The name
// must be a reloadable entry of config.Secrets: anything else is a wiring
// mistake, which panics when the daemon is built.
func (h heldSecrets) current(name string) func() []byte {
	p, ok := h[name]
	if !ok {
		panic("daemon: " + name + " is not a reloadable secret of config.Secrets")
	}
	return func() []byte { return *p.Load() }
}
