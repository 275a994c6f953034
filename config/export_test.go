package config

// TestSinks are the sink rules config's own tests load with: the sinks of
// the daemon's registry (daemon.SinkRules), which config cannot import.
var TestSinks = []SinkRule{
	{Name: "file"},
	{Name: "http", Check: (*Config).ValidateHTTPSink},
	{Name: "exec", Check: (*Config).ValidateExecSink},
	{Name: "kafka", Check: (*Config).ValidateKafkaSink, CheckPayments: (*Config).ValidateKafkaPayments},
	{Name: "nats", Check: (*Config).ValidateNATSSink, CheckPayments: (*Config).ValidateNATSPayments},
}
