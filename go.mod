module github.com/tollgate-dev/tollgate

go 1.26.8

require (
	github.com/expr-lang/expr v1.17.8
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/spf13/pflag v1.1.0
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.14.0
)
