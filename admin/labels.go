package admin

import "github.com/batchhook/batchhook/internal/httpserver"

// SampledEvents are the events of the admin listener's sampled lines, as
// told to Options.LogDropped (the metrics start each at 0).
var SampledEvents = []string{"admin_unauthorized", "http_server_error", httpserver.EventAmbiguous}
