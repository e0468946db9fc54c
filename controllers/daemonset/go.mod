module github.com/flotilla-dev/flotilla/controllers/daemonset

go 1.26.0
