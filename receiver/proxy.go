package receiver

import (
	"net"
	"net/http"

	"github.com/labstack/echo/v4"
)

// clientIP builds the extractor behind the logged remote_addr when
// trusted proxies are configured (BATCHHOOK_TRUSTED_PROXIES): a request
// whose peer is in one of the ranges is logged with the client address its
// X-Forwarded-For (the first untrusted hop from the right) or, without
// that header, its X-Real-IP names. echo trusts loopback, link-local and
// private addresses by default; all three are turned off here, so only the
// configured ranges count. Without trusted proxies it returns nil and the
// headers are ignored: anyone can write them.
func clientIP(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return nil
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	xff, realIP := echo.ExtractIPFromXFFHeader(opts...), echo.ExtractIPFromRealIPHeader(opts...)
	return func(req *http.Request) string {
		if len(req.Header.Values(echo.HeaderXForwardedFor)) > 0 {
			return xff(req)
		}
		return realIP(req)
	}
}

// remoteAddr is what a log line names as the sender: the peer's ip:port,
// or, when a trusted proxy forwarded the request for another address,
// that address, with the proxy's ip:port as proxy.
func (s *Server) remoteAddr(req *http.Request) (addr, proxy string) {
	if s.clientIP == nil {
		return req.RemoteAddr, ""
	}
	peer, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr, ""
	}
	if ip := s.clientIP(req); ip != "" && ip != peer {
		return ip, req.RemoteAddr
	}
	return req.RemoteAddr, ""
}
