module github.com/flotilla-dev/flotilla/controllers/statefulset

go 1.26.0
