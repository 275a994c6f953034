package config

import (
	"fmt"
	"reflect"
	"unicode/utf8"
)

// SecretVar is one secret the daemon reads: BATCHHOOK_<Name>, or the file
// named by BATCHHOOK_<Name>_FILE (loadSecret's rules). Secrets is the one
// list of them: Load, Variables, VariableDocs, Effective, the required
// check and the daemon's reload on SIGHUP all read it, and a test fails
// for a Secret field of Config that is not in it.
type SecretVar struct {
	// Name is the variable without the prefix (SIGNING_SECRET); its file
	// variant is Name+"_FILE".
	Name string
	// Field is the Config field the value fills (SigningSecret); the path
	// of the file variant is in Field+"File".
	Field string
	// Required: the daemon does not start without it.
	Required bool
	// EmptyFix, when not "", refuses the variable set but empty and says
	// how to turn the feature off instead.
	EmptyFix string
	// Reload: SIGHUP reads the file variant again and the daemon swaps the
	// value in; the others are read once, at start.
	Reload bool
	// Sink names the sink whose variable it is, "" for none: the daemon
	// reloads it only when that sink is configured (only then was it
	// checked at start).
	Sink string
	// Key turns the secret into the value the daemon uses (the http sink's
	// whsec_ secret into its HMAC key); nil uses it as read.
	Key func(Secret) (Secret, error)
	// Check, when set, refuses a value that is set but too weak, at start
	// and on reload; its error says what is wrong and how to make a good
	// one, never the value.
	Check func(Secret) error
}

// Secrets are the daemon's secrets, in the order Load reads them and the
// daemon reloads them.
var Secrets = []SecretVar{
	{Name: "SIGNING_SECRET", Field: "SigningSecret", Required: true, Reload: true},
	{Name: "API_KEY", Field: "APIKey", Required: true, Reload: true},
	{Name: "ADMIN_TOKEN", Field: "AdminToken", Reload: true,
		EmptyFix: "unset it to run the admin API without a token", Check: CheckAdminToken},
	{Name: "HTTP_SINK_SECRET", Field: "HTTPSinkSecret", Reload: true, Sink: "http", Key: DecodeSinkSecret},
	// Unset, payments are off; set but empty is refused (DECISIONS 29): an
	// empty HMAC key would accept anyone who knows it is empty.
	{Name: "PAYMENTS_SIGNING_SECRET", Field: "PaymentsSigningSecret", Reload: true,
		EmptyFix: "unset it (and " + Var("PAYMENTS_SIGNING_SECRET_FILE") + ") to disable payments"},
	{Name: "KAFKA_SASL_PASSWORD", Field: "KafkaSASLPassword", Sink: "kafka"},
	{Name: "NATS_TOKEN", Field: "NatsToken", Sink: "nats"},
}

// Value is the secret as c holds it (as read, before Key).
func (s SecretVar) Value(c *Config) Secret {
	return reflect.ValueOf(c).Elem().FieldByName(s.Field).Interface().(Secret)
}

// File is the path c holds in the file variant, "" when unset.
func (s SecretVar) File(c *Config) string {
	return reflect.ValueOf(c).Elem().FieldByName(s.Field + "File").String()
}

// loadSecrets reads every secret of Secrets into c, in order; the error
// names the variable at fault.
func (c *Config) loadSecrets(e env) error {
	v := reflect.ValueOf(c).Elem()
	for _, s := range Secrets {
		val, err := loadSecret(e.lookup, s.Name, s.File(c), &c.Warnings)
		if err != nil {
			return err
		}
		if _, set := e.lookup(Var(s.Name)); set && len(val) == 0 && s.EmptyFix != "" {
			return fmt.Errorf("%s: set but empty; %s", Var(s.Name), s.EmptyFix)
		}
		v.FieldByName(s.Field).Set(reflect.ValueOf(val))
	}
	return nil
}

// checkSecrets runs each set secret's Check; the error names the variable
// the value came from (the _FILE one when read from a file).
func (c *Config) checkSecrets() error {
	for _, s := range Secrets {
		if v := s.Value(c); s.Check != nil && len(v) > 0 {
			if err := s.Check(v); err != nil {
				name := s.Name
				if s.File(c) != "" {
					name += "_FILE"
				}
				return fmt.Errorf("%s: %w", Var(name), err)
			}
		}
	}
	return nil
}

// secretVar returns the entry of Secrets named short, if any.
func secretVar(short string) (SecretVar, bool) {
	for _, s := range Secrets {
		if s.Name == short {
			return s, true
		}
	}
	return SecretVar{}, false
}

// MinAdminToken is the fewest characters an admin token may have: the
// limit on wrong tokens slows a guesser, it cannot save a token short
// enough to be guessed anyway.
const MinAdminToken = 16

// CheckAdminToken refuses an admin token shorter than MinAdminToken
// characters, saying how to make one.
func CheckAdminToken(s Secret) error {
	if n := utf8.RuneCount(s); n < MinAdminToken {
		return fmt.Errorf("the admin token has %d characters, fewer than %d: make a random one, "+
			"e.g. `openssl rand -hex 32` or `head -c 32 /dev/urandom | base64`", n, MinAdminToken)
	}
	return nil
}
