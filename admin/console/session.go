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

// maxCookies bounds how many cookies of the session's name a request may
// have looked up: a browser holds one of its own, and a few more tossed by
// other pages of the same host.
const maxCookies = 8

// keys returns the map keys of the values of every cookie of the
// session's name that r carries (the first maxCookies).
//
// Every one, not only the first: cookies are not isolated by port, so a
// page on another port of the same host can set a cookie of this name,
// and with a longer Path (/ui/batches) the browser sends it before the
// console's own. Read first-only, such a cookie would sign the operator
// out of those pages; read all, a tossed value is simply one that names
// no session.
func keys(r *http.Request) [][32]byte {
	var out [][32]byte
	for _, ck := range r.CookiesNamed(cookieName) {
		if ck.Value == "" {
			continue
		}
		if len(out) == maxCookies {
			break
		}
		out = append(out, sha256.Sum256([]byte(ck.Value)))
	}
	return out
}

// get returns the live session among r's cookies, or nil: none, unknown,
// expired, or signed in with a token that is no longer the daemon's.
// A cookie that names no live session is ignored, never trusted.
func (s *sessions) get(r *http.Request, token []byte, now time.Time) *session {
	ks := keys(r)
	if len(ks) == 0 {
		return nil
	}
	sum := sha256.Sum256(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range ks {
		ss := s.byID[key]
		if ss == nil {
			continue
		}
		if !now.Before(ss.expires) || len(token) == 0 || subtle.ConstantTimeCompare(sum[:], ss.tokenSum[:]) != 1 {
			delete(s.byID, key)
			continue
		}
		return ss
	}
	return nil
}

// end removes every session r's cookies name.
func (s *sessions) end(r *http.Request) {
	ks := keys(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range ks {
		delete(s.byID, key)
	}
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
