module github.com/flotilla-dev/flotilla/controllers/cronjob

go 1.26.0
