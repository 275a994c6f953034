package config

import (
	"fmt"
	"net/url"
	"os"
)

// DefaultAdminURL is where the CLI looks for the admin API by default.
const DefaultAdminURL = "http://127.0.0.1:9090"

// Client is what the CLI commands read from the environment: where the
// admin API is and the token it wants.
type Client struct {
	AdminURL string
	Token    Secret
}

// LoadClient reads BATCHHOOK_ADMIN_URL and BATCHHOOK_ADMIN_TOKEN or
// BATCHHOOK_ADMIN_TOKEN_FILE (same rules as the daemon: both set is an
// error, a file loses one final line ending, an empty value is an error).
func LoadClient() (Client, error) {
	c := Client{AdminURL: DefaultAdminURL}
	if v, ok := os.LookupEnv(Var("ADMIN_URL")); ok {
		c.AdminURL = v
	}
	if u, err := url.Parse(c.AdminURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("%s: %q must be an http(s) URL%s", Var("ADMIN_URL"), c.AdminURL, schemeHint(c.AdminURL))
	}
	file := os.Getenv(Var("ADMIN_TOKEN_FILE"))
	tok, err := loadSecret(os.LookupEnv, "ADMIN_TOKEN", file, nil)
	if err != nil {
		return c, err
	}
	if _, set := os.LookupEnv(Var("ADMIN_TOKEN")); set && len(tok) == 0 {
		return c, fmt.Errorf("%s: set but empty", Var("ADMIN_TOKEN"))
	}
	c.Token = tok
	return c, nil
}
