package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Sessions live in memory: a restart signs everybody out, which is the
// safe side, and signing out ends a session for good (a stolen cookie is
// worthless after it). The map is keyed by the SHA-256 of the cookie's
// value, so a lookup's timing says nothing about a valid value.

// cookieName names the session cookie; its Path is /ui/.
const cookieName = "batchhook_console"

type session struct {
	// csrf is the token every form of this session carries.
	csrf string
	// tokenSum is the SHA-256 of the admin token the session signed in
	// with: once the daemon's token differs, the session is over.
	tokenSum [32]byte
	created  time.Time
	expires  time.Time
}

type sessions struct {
	mu   sync.Mutex
	byID map[[32]byte]*session
	max  int
}

func newSessions(max int) *sessions {
	return &sessions{byID: map[[32]byte]*session{}, max: max}
}

// randomToken returns 32 random bytes as unpadded base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

// start opens a session for a sign-in with token and returns the cookie's
// value. Past max sessions, the oldest ends.
func (s *sessions) start(token []byte, now time.Time, ttl time.Duration) (string, *session) {
	id := randomToken()
	ss := &session{csrf: randomToken(), tokenSum: sha256.Sum256(token), created: now, expires: now.Add(ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.byID {
		if !now.Before(v.expires) {
			delete(s.byID, k)
		}
	}
	for len(s.byID) >= s.max {
		var oldest [32]byte
		first := true
		for k, v := range s.byID {
			if first || v.created.Before(s.byID[oldest].created) {
				oldest, first = k, false
			}
		}
		delete(s.byID, oldest)
	}
	s.byID[sha256.Sum256([]byte(id))] = ss
	return id, ss
}

// get returns the live session of r's cookie, or nil: none, unknown,
// expired, or signed in with a token that is no longer the daemon's.
func (s *sessions) get(r *http.Request, token []byte, now time.Time) *session {
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" {
		return nil
	}
	key := sha256.Sum256([]byte(ck.Value))
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byID[key]
	if ss == nil {
		return nil
	}
	sum := sha256.Sum256(token)
	if !now.Before(ss.expires) || len(token) == 0 || subtle.ConstantTimeCompare(sum[:], ss.tokenSum[:]) != 1 {
		delete(s.byID, key)
		return nil
	}
	return ss
}

// end removes the session of r's cookie, if any.
func (s *sessions) end(r *http.Request) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, sha256.Sum256([]byte(ck.Value)))
}

// count says how many sessions are kept, for tests.
func (s *sessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// secure says whether the cookie gets the Secure attribute: when the
// request came over TLS, directly or through a proxy that says so.
func secure(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// sessionCookie is the cookie of a new session (value set) or of a
// signed-out one (value empty: the browser drops it).
func sessionCookie(r *http.Request, value string, ttl time.Duration) *http.Cookie {
	ck := &http.Cookie{Name: cookieName, Value: value, Path: "/ui/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: secure(r), MaxAge: int(ttl / time.Second)}
	if value == "" {
		ck.MaxAge = -1
	}
	return ck
}

// checkCSRF reports whether the form of r carries ss's CSRF token.
func checkCSRF(r *http.Request, ss *session) bool {
	got := r.PostFormValue("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf)) == 1
}
