# Independent CPF vectors for cpf_test.go (not computed by the Go code):
#   python3 gen.py > vectors.txt
import random
random.seed(20261122)

def check(digits):
    for n in (9, 10):
        s = sum(d * (n + 1 - i) for i, d in enumerate(digits[:n]))
        r = (s * 10) % 11
        digits.append(0 if r == 10 else r)
    return digits

def fmt(d):
    s = "".join(map(str, d))
    return s if random.random() < 0.5 else f"{s[:3]}.{s[3:6]}.{s[6:9]}-{s[9:]}"

for _ in range(40):
    while True:
        base = [random.randrange(10) for _ in range(9)]
        if len(set(base)) > 1:
            break
    good = check(base[:])
    print("valid", fmt(good))
    bad = good[:]
    k = random.choice([9, 10])
    bad[k] = (bad[k] + random.randrange(1, 10)) % 10
    print("invalid", fmt(bad))
for d in range(10):
    print("invalid", str(d) * 11)
