module kubectl-aiml/scripts/krew-manifest

go 1.22
