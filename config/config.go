// Package config loads and validates batchhook's settings from the process
// environment (prefix BATCHHOOK_), over an optional env file (ReadEnvFile),
// once, at start. It is a leaf: it imports no
// other batchhook package, and it is the only package that knows envconfig.
//
// Every error names the variable at fault, so a daemon that refuses to start
// says in one line what to fix. Secrets are held as Secret values whose
// String method never prints them.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Prefix is the prefix of every environment variable batchhook reads.
const Prefix = "BATCHHOOK"

// Config is the validated configuration of the daemon.
//
// Field names map to variables through envconfig's split_words rule
// (APIBaseURL → BATCHHOOK_API_BASE_URL). The envconfig tag is deliberately
// not used: with it envconfig falls back to the unprefixed name, so a stray
// API_KEY in the environment would be read as ours.
type Config struct {
	ListenAddr  string `split_words:"true" default:":8080"`
	WebhookPath string `split_words:"true" default:"/webhooks/batch-completed"`

	SigningSecret     Secret `split_words:"true" ignored:"true"`
	SigningSecretFile string `split_words:"true"`
	APIKey            Secret `split_words:"true" ignored:"true"`
	APIKeyFile        string `split_words:"true"`

	// The payments product (payments.go): its webhook is served
	// when PaymentsSigningSecret is set (PaymentsEnabled).
	PaymentsWebhookPath       string `split_words:"true" default:"/webhooks/payments"`
	PaymentsSigningSecret     Secret `split_words:"true" ignored:"true"`
	PaymentsSigningSecretFile string `split_words:"true"`
	PaymentsDedupFields       string `split_words:"true" default:"transaction.id,transaction.status,transaction.updated_at"`

	// AdminAddr is the admin listener (health, metrics, admin API, CLI).
	AdminAddr string `split_words:"true" default:"127.0.0.1:9090"`
	// AdminToken, when set, is required as a Bearer token on every admin
	// route but /healthz and /readyz.
	AdminToken     Secret `split_words:"true" ignored:"true"`
	AdminTokenFile string `split_words:"true"`
	// Console serves the operator's console under /ui/ on the admin
	// listener; it lets in only who signs in with the admin token.
	Console bool `default:"true"`
	// ConsoleSession bounds a console session's life from its sign-in.
	ConsoleSession time.Duration `split_words:"true" default:"8h"`
	// ConsoleHosts: comma names, besides loopback ones, under which the
	// console answers (consolehosts.go); read with ConsoleHostNames.
	ConsoleHosts string `split_words:"true"`

	APIBaseURL   string `split_words:"true"`
	DataDir      string `split_words:"true" default:"./data"`
	ExportDir    string `split_words:"true"`
	PageLimit    int    `split_words:"true" default:"100"`
	CursorParam  string `split_words:"true" default:"cursor"`
	ResultsField string `split_words:"true"`
	FetchWorkers int    `split_words:"true" default:"4"`

	Retention     time.Duration `split_words:"true" default:"168h"`
	FetchTimeout  time.Duration `split_words:"true" default:"30s"`
	BackoffBase   time.Duration `split_words:"true" default:"1s"`
	BackoffMax    time.Duration `split_words:"true" default:"5m"`
	NotFoundGrace time.Duration `split_words:"true" default:"1h"`

	// Retention of personal data: exports are deleted
	// ExportRetention after they were exported, records reduced to
	// tombstones (and raw bodies, chunk CPFs deleted) RecordRetention after
	// the batch finished; 0 keeps them for ever. The purger runs every
	// PurgeInterval and at start.
	ExportRetention time.Duration `split_words:"true" default:"720h"`
	RecordRetention time.Duration `split_words:"true" default:"2160h"`
	PurgeInterval   time.Duration `split_words:"true" default:"1h"`

	MaxBodyBytes int64 `split_words:"true" default:"65536"`
	MaxPageBytes int64 `split_words:"true" default:"33554432"`

	// Submitting. The limits are the provider's (docs/provider-api.md §8).
	SubmitPerMinute int           `split_words:"true" default:"10"`
	MaxInFlight     int           `split_words:"true" default:"50"`
	ReconcileAfter  time.Duration `split_words:"true" default:"15m"`
	// StatusField names the GET result member that carries the batch's
	// status (docs/provider-api.md shows none; the simulator uses "status").
	StatusField string `split_words:"true" default:"status"`
	// MaxSubmissionBytes caps a body sent to POST /admin/submissions.
	MaxSubmissionBytes int64 `split_words:"true" default:"16777216"`
	// The resubmit rule: items whose ResubmitField is one of the
	// comma-separated ResubmitValues are sent again, using ItemCPFField.
	ResubmitField  string `split_words:"true" default:"result"`
	ResubmitValues string `split_words:"true" default:"pending,incomplete"`
	ItemCPFField   string `split_words:"true" default:"cpf"`

	LogLevel  string `split_words:"true" default:"info"`
	LogFormat string `split_words:"true" default:"json"`

	// RepairPermissions lets Load set a group- or world-writable data or
	// export directory to 0700 (with a warning) instead of refusing it.
	RepairPermissions bool `split_words:"true"`
	// Warnings are what Load accepted but the daemon logs at start.
	Warnings []Warning `ignored:"true"`
	// MaxConnections caps the webhook connections held at once; more wait
	// in the kernel's listen backlog. A last line, set well above any real
	// load: a stalled sender costs little (docs/performance.md).
	MaxConnections int `split_words:"true" default:"10000"`
	// MemoryLimit is the Go runtime's soft memory limit (debug.SetMemoryLimit),
	// a size such as 256MiB; "0" or "off" leaves the runtime's default
	// (which honours GOMEMLIMIT). Read it with MemoryLimitBytes.
	MemoryLimit string `split_words:"true" default:"256MiB"`
	// TrustedProxies: comma CIDRs of reverse proxies whose forwarding
	// headers name the logged sender (proxies.go).
	TrustedProxies string `split_words:"true"`
	// RejectedKeep is how many rejected (401) deliveries are kept for
	// `batchhook verify --rejected` (0 keeps none).
	RejectedKeep int `split_words:"true" default:"100"`
	// PprofAddr, when set, serves Go's profiles (net/http/pprof) on this
	// loopback host:port, for measuring the ack path (docs/performance.md). Off by default; never on the webhook or admin
	// listener, and refused on anything but loopback: a profile shows
	// memory, which holds personal data.
	PprofAddr string `split_words:"true"`

	// Downstream delivery (sinks.go). Sinks is a comma list of the sinks
	// of the daemon's registry (file, http, exec, kafka, nats).
	Sinks       string `split_words:"true" default:"file"`
	SinkWorkers int    `split_words:"true" default:"2"`
	// The http sink: Standard Webhooks POSTs to HTTPSinkURL, signed with
	// the key of HTTPSinkSecret (whsec_<base64>; DecodeSinkSecret).
	HTTPSinkURL        string        `split_words:"true"`
	HTTPSinkSecret     Secret        `split_words:"true" ignored:"true"`
	HTTPSinkSecretFile string        `split_words:"true"`
	HTTPSinkMaxItems   int           `split_words:"true" default:"1000"`
	HTTPSinkTimeout    time.Duration `split_words:"true" default:"30s"`
	// The exec sink: ExecSinkCommand is a JSON array (ExecSinkArgv).
	ExecSinkCommand   string        `split_words:"true"`
	ExecSinkTimeout   time.Duration `split_words:"true" default:"5m"`
	ExecSinkLogOutput bool          `split_words:"true"`
	// The kafka sink (kafka.go): one transaction per batch on KafkaTopic.
	// An empty KafkaTransactionalID means the stable one the daemon keeps
	// in its database.
	KafkaBrokers          string        `split_words:"true"`
	KafkaTopic            string        `split_words:"true" default:"batchhook.results"`
	KafkaTransactionalID  string        `split_words:"true"`
	KafkaTLS              bool          `split_words:"true"`
	KafkaTLSCaFile        string        `split_words:"true"`
	KafkaSASLMechanism    string        `split_words:"true"`
	KafkaSASLUser         string        `split_words:"true"`
	KafkaSASLPassword     Secret        `split_words:"true" ignored:"true"`
	KafkaSASLPasswordFile string        `split_words:"true"`
	KafkaTimeout          time.Duration `split_words:"true" default:"60s"`
	// The nats sink (natssink.go): JetStream publishes on NATSSubject.
	// (split_words, not envconfig tags: a tag would also read the
	// unprefixed name.)
	NatsURL            string        `split_words:"true"`
	NatsSubject        string        `split_words:"true" default:"batchhook.results"`
	NatsCredsFile      string        `split_words:"true"`
	NatsToken          Secret        `split_words:"true" ignored:"true"`
	NatsTokenFile      string        `split_words:"true"`
	NatsTLSCaFile      string        `split_words:"true"`
	NatsCreateStream   bool          `split_words:"true"`
	NatsPublishTimeout time.Duration `split_words:"true" default:"10s"`
	// The payments topic and subject of the sinks (payments_sinks.go).
	PaymentSinks
}

// Load reads the environment, applies defaults, reads secret files,
// validates the result and checks the modes of the data and export
// directories (checkDirs). The error names the first variable at fault.
func Load(sinks []SinkRule) (*Config, error) {
	return load(sinks, env{})
}

// LoadWithFile is Load with the variables of an env file (ReadEnvFile)
// beneath the process environment: a variable set in both takes the
// environment's value.
func LoadWithFile(sinks []SinkRule, file *EnvFile) (*Config, error) {
	e := env{}
	if file != nil {
		e.file = file.Vars
	}
	return load(sinks, e)
}

func load(sinks []SinkRule, e env) (*Config, error) {
	var c Config
	if err := readEnv(&c, e); err != nil {
		return nil, err
	}
	if lvl, ok := ParseLogLevel(c.LogLevel); ok {
		c.LogLevel = lvl
	}
	if err := c.loadSecrets(e); err != nil {
		return nil, err
	}
	if c.ExportDir == "" {
		c.ExportDir = filepath.Join(c.DataDir, "exports")
	}
	names := e.names()
	if err := c.validate(sinks, names); err != nil {
		return nil, err
	}
	if err := c.checkDirs(); err != nil {
		return nil, err
	}
	if w := baseURLWarning(c.APIBaseURL); w != nil {
		c.Warnings = append(c.Warnings, *w)
	}
	c.Warnings = append(c.Warnings, unknownVariables(names)...)
	c.Warnings = append(c.Warnings, c.limitWarnings()...)
	return &c, nil
}

// Var returns the full environment variable name for a short name
// ("API_KEY" → "BATCHHOOK_API_KEY"), for error messages.
func Var(name string) string { return Prefix + "_" + name }

// Validate checks every setting and names the variable of the first one
// that is wrong; sinks are the sinks batchhook has (daemon.SinkRules).
// The demo, which builds a Config in code, calls it too.
func (c *Config) Validate(sinks []SinkRule) error { return c.validate(sinks, nil) }

// validate is Validate; set names the variables the environment sets,
// for the hints of missingRequired.
func (c *Config) validate(sinks []SinkRule, set []string) error {
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		return fmt.Errorf("%s: %q is not host:port: %w", Var("LISTEN_ADDR"), c.ListenAddr, err)
	}
	if !strings.HasPrefix(c.WebhookPath, "/") || strings.ContainsAny(c.WebhookPath, "?#*: ") {
		return fmt.Errorf("%s: %q must be a plain path starting with /", Var("WEBHOOK_PATH"), c.WebhookPath)
	}
	if err := c.missingRequired(set); err != nil {
		return err
	}
	if err := c.checkSecrets(); err != nil {
		return err
	}
	adminHost, _, err := net.SplitHostPort(c.AdminAddr)
	if err != nil {
		return fmt.Errorf("%s: %q is not host:port: %w", Var("ADMIN_ADDR"), c.AdminAddr, err)
	}
	if !maybeLoopback(adminHost) && len(c.AdminToken) == 0 {
		return fmt.Errorf("%s or %s: required when %s (%s) is not a loopback address",
			Var("ADMIN_TOKEN"), Var("ADMIN_TOKEN_FILE"), Var("ADMIN_ADDR"), c.AdminAddr)
	}
	if err := validPprofAddr(c.PprofAddr); err != nil {
		return err
	}
	if err := validateBaseURL(c.APIBaseURL); err != nil {
		return fmt.Errorf("%s: %w", Var("API_BASE_URL"), err)
	}
	checks := []struct {
		ok   bool
		name string
		want string
	}{
		{c.DataDir != "", "DATA_DIR", "must not be empty"},
		{c.ExportDir != "", "EXPORT_DIR", "must not be empty (Load derives $BATCHHOOK_DATA_DIR/exports)"},
		{c.PageLimit >= 1, "PAGE_LIMIT", "must be at least 1"},
		{c.CursorParam != "" && url.QueryEscape(c.CursorParam) == c.CursorParam && c.CursorParam != "limit",
			"CURSOR_PARAM", "must be a plain query parameter name other than limit"},
		{c.FetchWorkers >= 0 && c.FetchWorkers <= 256, "FETCH_WORKERS", "must be between 0 (paused) and 256"},
		{c.Retention > 0, "RETENTION", "must be positive"},
		{c.FetchTimeout > 0, "FETCH_TIMEOUT", "must be positive"},
		{c.BackoffBase > 0, "BACKOFF_BASE", "must be positive"},
		{c.BackoffMax >= c.BackoffBase, "BACKOFF_MAX", "must be at least BATCHHOOK_BACKOFF_BASE"},
		{c.NotFoundGrace >= 0, "NOT_FOUND_GRACE", "must not be negative"},
		{c.ExportRetention >= 0, "EXPORT_RETENTION", "must not be negative (0 keeps exports for ever)"},
		{c.RecordRetention >= 0, "RECORD_RETENTION", "must not be negative (0 keeps records for ever)"},
		{c.PurgeInterval > 0, "PURGE_INTERVAL", "must be positive"},
		{c.MaxBodyBytes >= 1024 && c.MaxBodyBytes <= 16<<20, "MAX_BODY_BYTES", "must be between 1024 and 16777216"},
		{c.MaxPageBytes >= 4096, "MAX_PAGE_BYTES", "must be at least 4096"},
		{c.SubmitPerMinute >= 1, "SUBMIT_PER_MINUTE", "must be at least 1"},
		{c.MaxInFlight >= 1, "MAX_IN_FLIGHT", "must be at least 1"},
		{c.ReconcileAfter > 0, "RECONCILE_AFTER", "must be positive"},
		{c.StatusField != "", "STATUS_FIELD", "must not be empty"},
		{c.MaxSubmissionBytes >= 1024, "MAX_SUBMISSION_BYTES", "must be at least 1024"},
		{c.ResubmitField != "", "RESUBMIT_FIELD", "must not be empty"},
		{len(c.ResubmitValueList()) > 0, "RESUBMIT_VALUES", "must list at least one value, comma-separated"},
		{c.ItemCPFField != "", "ITEM_CPF_FIELD", "must not be empty"},
		{validLevel(c.LogLevel), "LOG_LEVEL", "must be one of trace, debug, info, warn (or warning), error, in any case"},
		{c.LogFormat == "json" || c.LogFormat == "console", "LOG_FORMAT", "must be json or console"},
		{c.MaxConnections >= 1 && c.MaxConnections <= 1_000_000, "MAX_CONNECTIONS", "must be between 1 and 1000000"},
		{validMemoryLimit(c.MemoryLimit), "MEMORY_LIMIT", "must be a size of at least 32MiB such as 256MiB or 1GiB, or 0/off for none"},
		{c.RejectedKeep >= 0 && c.RejectedKeep <= 10000, "REJECTED_KEEP", "must be between 0 (keep none) and 10000"},
		{c.ConsoleSession >= time.Minute && c.ConsoleSession <= 7*24*time.Hour, "CONSOLE_SESSION", "must be between 1m and 168h"},
	}
	for _, ch := range checks {
		if !ch.ok {
			return fmt.Errorf("%s: %s", Var(ch.name), ch.want)
		}
	}
	if _, err := c.TrustedProxyNets(); err != nil {
		return err
	}
	if _, err := c.ConsoleHostNames(); err != nil {
		return err
	}
	if err := c.validatePayments(); err != nil {
		return err
	}
	if err := c.validateSinks(sinks); err != nil {
		return err
	}
	return c.validatePaymentSinks(sinks)
}

// missingRequired reports every required setting left unset or empty in
// one error, so that a first start names all of them at once. When a
// variable in set looks meant for a missing one (a misspelling, or the
// name without the BATCHHOOK_ prefix), the error says which.
func (c *Config) missingRequired(set []string) error {
	type need struct{ names, hint string }
	var missing []need
	for _, s := range Secrets {
		if s.Required && len(s.Value(c)) == 0 {
			missing = append(missing, need{Var(s.Name) + " or " + Var(s.Name+"_FILE"),
				meantFor(set, Var(s.Name), Var(s.Name+"_FILE"))})
		}
	}
	if c.APIBaseURL == "" {
		missing = append(missing, need{Var("API_BASE_URL"), meantFor(set, Var("API_BASE_URL"))})
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: required, and must not be empty%s", missing[0].names, missing[0].hint)
	}
	list := make([]string, len(missing))
	for i, m := range missing {
		list[i] = m.names + m.hint
	}
	return fmt.Errorf("required, and must not be empty: %s", strings.Join(list, "; "))
}

func validLevel(s string) bool { _, ok := ParseLogLevel(s); return ok }

// schemeHint adds the fix for a URL written without its scheme
// ("provider.example/api" or "localhost:8080", which url.Parse reads as
// the scheme "localhost").
func schemeHint(raw string) string {
	if strings.Contains(raw, "://") {
		return ""
	}
	return "; add http:// or https:// in front"
}

// ResubmitValueList splits RESUBMIT_VALUES, dropping blanks.
func (c *Config) ResubmitValueList() []string {
	var out []string
	for _, v := range strings.Split(c.ResubmitValues, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// maybeLoopback reports whether host may turn out to be a loopback
// address: a loopback IP, or a name. A name proves nothing ("localhost"
// can resolve anywhere), so the daemon decides from the address it bound
// (CheckAdminBound); this only refuses early what can never be loopback:
// an empty host (all interfaces) or another IP.
func maybeLoopback(host string) bool {
	if host == "" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || ip.IsLoopback()
}

// validPprofAddr accepts "" (off) or a host:port whose host is a loopback
// IP or "localhost"; the bound address is checked again (CheckPprofBound).
func validPprofAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: %q is not host:port: %w", Var("PPROF_ADDR"), addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s: %q must be on loopback (127.0.0.1:PORT, [::1]:PORT or localhost:PORT): profiles show the daemon's memory", Var("PPROF_ADDR"), addr)
	}
	return nil
}

// CheckPprofBound refuses a profile listener the kernel bound to anything
// but loopback.
func CheckPprofBound(bound net.Addr) error {
	if tcp, ok := bound.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s: bound to %s, which is not a loopback address", Var("PPROF_ADDR"), bound)
}

// CheckAdminBound refuses an admin listener bound to anything but a
// loopback address when no admin token is set. It judges the address the
// kernel bound, after the name in BATCHHOOK_ADMIN_ADDR was resolved.
func CheckAdminBound(bound net.Addr, tokenSet bool) error {
	if tokenSet {
		return nil
	}
	if tcp, ok := bound.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s or %s: required: the admin listener (%s) is bound to %s, which is not a loopback address",
		Var("ADMIN_TOKEN"), Var("ADMIN_TOKEN_FILE"), Var("ADMIN_ADDR"), bound)
}

var validLevels = map[string]bool{"trace": true, "debug": true, "info": true, "warn": true, "error": true}

// validateBaseURL checks API_BASE_URL. Credentials in it (user:pass@) are
// refused, not redacted: the URL is logged at start and appears in
// errors, and the key has its own variables. No error here quotes a value
// that holds an "@", and a parse error is reported without the URL.
func validateBaseURL(raw string) error {
	if raw == "" {
		return errors.New("required")
	}
	shown, hidden := quoteURL(raw), strings.ContainsAny(raw, "@?#")
	if !strings.Contains(raw, "://") { // before url.Parse: "127.0.0.1:8081" fails there with a colon error
		return fmt.Errorf("%s must be an absolute http or https URL%s", shown, schemeHint(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the whole URL
		}
		if hidden { // even the detail may quote part of a password
			return fmt.Errorf("%s is not a URL", shown)
		}
		return fmt.Errorf("%s is not a URL: %w", shown, err)
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials (user:password@); put the API key in %s or %s",
			Var("API_KEY"), Var("API_KEY_FILE"))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s must be an absolute http or https URL%s", shown, schemeHint(raw))
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return fmt.Errorf("%s must not carry a query or fragment", shown)
	}
	return nil
}

// quoteURL quotes a URL for an error message, unless it may carry a
// secret: userinfo (@) may hold a password, and a query or fragment a key
// (?api_key=…, #token): such a value is never quoted back.
func quoteURL(raw string) string {
	if strings.ContainsAny(raw, "@?#") {
		return "the value (not shown: it holds an @, ? or #)"
	}
	return strconv.Quote(raw)
}

// Variables returns the full name of every environment variable the daemon
// reads, in declaration order: envconfig's own names for the plain
// settings, plus the secrets, which are read here. Docs and deploy files
// are checked against it.
func Variables() []string {
	var names []string
	for _, v := range envVars() {
		names = append(names, v.Key)
	}
	for _, s := range Secrets {
		names = append(names, Var(s.Name))
	}
	return names
}
