package kafkasink

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewChecksOptions(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := Options{Brokers: []string{"127.0.0.1:9092"}, TransactionalID: "t"}
	for name, c := range map[string]struct {
		mod  func(*Options)
		want string
	}{
		"no brokers":        {func(o *Options) { o.Brokers = nil }, "Brokers"},
		"broker no port":    {func(o *Options) { o.Brokers = []string{"kafka"} }, "host:port"},
		"broker with creds": {func(o *Options) { o.Brokers = []string{"u:p@kafka:9092"} }, "host:port"},
		"no txn id":         {func(o *Options) { o.TransactionalID = "" }, "TransactionalID"},
		"bad mechanism":     {func(o *Options) { o.SASLMechanism, o.SASLUser, o.SASLPassword = "gssapi", "u", pw("secret-pw") }, "SASLMechanism"},
		"user no mechanism": {func(o *Options) { o.SASLUser = "u" }, "SASLMechanism"},
		"no password":       {func(o *Options) { o.SASLMechanism, o.SASLUser = SASLPlain, "u" }, "password"},
		"bad CA file":       {func(o *Options) { o.TLS, o.CAFile = true, ca }, "PEM"},
		"missing CA file":   {func(o *Options) { o.CAFile = ca + ".absent" }, "CAFile"},
	} {
		o := good
		c.mod(&o)
		_, err := New(o)
		if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrOptions naming %s", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-pw") {
			t.Errorf("%s: the error quotes the password", name)
		}
	}
	s, err := New(good)
	if err != nil || s.topic != DefaultTopic || s.Name() != "kafka" {
		t.Fatalf("defaults: %v %+v", err, s)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	o := good
	o.TLS = true // system roots
	if _, err := New(o); err != nil {
		t.Fatalf("TLS with system roots: %v", err)
	}
}
