package admin

import "github.com/labstack/echo/v4"

// authRoutes registers the routes that need the token, each with the auth
// middleware. It is not an echo Group on purpose: a group with middleware
// adds a catch-all route for every method, so a wrong method on a known
// path (GET on a POST-only route) would answer 404; registered one by one,
// echo's router answers 405 with an Allow header.
type authRoutes struct {
	e    *echo.Echo
	auth echo.MiddlewareFunc
}

// GET registers a GET route behind the token.
func (r authRoutes) GET(path string, h echo.HandlerFunc) { r.e.GET(path, h, r.auth) }

// POST registers a POST route behind the token.
func (r authRoutes) POST(path string, h echo.HandlerFunc) { r.e.POST(path, h, r.auth) }

// PUT registers a PUT route behind the token.
func (r authRoutes) PUT(path string, h echo.HandlerFunc) { r.e.PUT(path, h, r.auth) }

// DELETE registers a DELETE route behind the token.
func (r authRoutes) DELETE(path string, h echo.HandlerFunc) { r.e.DELETE(path, h, r.auth) }
