module volley/servers/go

go 1.24
