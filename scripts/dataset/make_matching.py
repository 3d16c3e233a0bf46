#!/usr/bin/env python3
"""Builds Paddock's text-matching sample: synthetic customer-service question pairs, said plainly to be
synthetic.

No openly licensed Chinese paraphrase corpus can be fetched here (LCQMC, AFQMC and BQ are for research
use only), so the pairs are generated: 30 intents a bank, a shop or a delivery service hears every day,
each with several hand-written phrasings whose slots take synonyms ("怎么{修改|更改|重置}{密码|登录密码}").
A pair is `same` when both questions come from one intent (two different phrasings whenever the intent
has them) and `different` otherwise; half of the `different` pairs are hard: the two intents share a
topic (a password changed vs a phone number changed), so word overlap alone does not decide.

Writes `matching_train.tsv` and `matching_dev.tsv` (`text_a<TAB>text_b<TAB>label`, balanced) with a fixed
seed. No pair is in both, but questions recur across pairs, as they do in LCQMC: the dev set measures
whether the model judges new pairings of questions, not whether it reads questions it never saw (a model
trained from scratch on a few thousand pairs cannot, and a pretrained one is not at hand in the tests).
Standard library only:
    python3 scripts/dataset/make_matching.py --out trainer/tests/fixtures/data
"""
import argparse
import itertools
import os
import random
import re

SEED = 20261207
TRAIN_PAIRS = 3000
DEV_PAIRS = 240

# (topic, intent, phrasings). Intents of one topic make the hard negatives.
INTENTS = [
    ("account", "reset_password", ["怎么{修改|更改|重置}{密码|登录密码}", "{密码|登录密码}忘了怎么办", "我想{改|换}一下{密码|登录密码}",
                                   "如何{找回|重设}{密码|登录密码}", "{登录密码|密码}{怎么改|在哪里改}"]),
    ("account", "change_phone", ["怎么{修改|更换|换}绑定的手机号", "手机号{换了|不用了}怎么{改|更新}", "如何{更改|修改}{预留手机号|绑定手机}",
                                 "我想换{一个|个}新的手机号", "绑定手机号{在哪里改|怎么换}"]),
    ("account", "close_account", ["怎么{注销|删除}{账号|账户}", "我{不想用了|要走了}，{账号|账户}能注销吗", "如何{永久|彻底}{注销|删除}{账户|账号}",
                                  "{账号|账户}注销{在哪里|怎么操作}"]),
    ("account", "unlock_account", ["{账号|账户}被{锁|冻结}了怎么办", "为什么我的{账号|账户}{登录不了|被锁定}", "怎么{解锁|解冻}{账号|账户}",
                                   "{账户|账号}{冻结|锁住}了{怎么解除|如何恢复}"]),
    ("card", "lost_card", ["{银行卡|卡}{丢了|掉了|找不到了}怎么办", "我的{卡|银行卡}{丢失了|被偷了}", "{卡|银行卡}丢了{怎么挂失|要挂失吗}",
                           "如何{挂失|冻结}{银行卡|我的卡}"]),
    ("card", "card_limit", ["{信用卡|卡}{额度|限额}{怎么提高|能提吗}", "怎么{提升|提高|调高}{信用卡|卡的}额度", "{额度|信用额度}太低了{能调吗|怎么办}",
                            "我想{申请|要}提{额度|信用额度}"]),
    ("card", "apply_card", ["怎么{办|申请}{信用卡|一张卡}", "{信用卡|卡}{在哪里|如何}申请", "我想{办一张|申请}{信用卡|新卡}",
                            "{申请|办理}{信用卡|卡}需要{什么材料|哪些资料}"]),
    ("card", "card_fee", ["{年费|信用卡年费}{怎么收|是多少}", "{信用卡|卡}{要交|有}年费吗", "{年费|卡的年费}能{免|减免}吗",
                          "为什么{扣了|收了}{年费|卡费}"]),
    ("money", "transfer_slow", ["{转账|汇款}{多久到账|什么时候到}", "{转账|汇款}{还没到|没到账}怎么回事", "为什么{转账|汇款}{这么慢|一直不到}",
                                "{钱|转的钱}{转出去了|汇出去了}对方{没收到|还没收到}"]),
    ("money", "transfer_limit", ["{转账|汇款}{限额|上限}是多少", "{一天|每天}最多能{转|转账}多少", "怎么{提高|调整}{转账|汇款}限额",
                                 "{转账|汇款}超{限额|额度}了怎么办"]),
    ("money", "refund", ["{钱|款}{怎么退|什么时候退}回来", "{退款|退的钱}{多久到账|什么时候到}", "我要{申请|办理}退款",
                         "{退款|退货款}{还没收到|没到账}"]),
    ("money", "interest", ["{存款|定期}利率是多少", "{定期|存款}{利息|利率}{怎么算|多少}", "{现在|目前}存{一年|三年}利息多少",
                           "{利息|利率}{什么时候|多久}调整"]),
    ("order", "track_order", ["我的{快递|包裹|订单}到哪了", "{怎么|如何}查{物流|快递|包裹}", "{快递|包裹}{一直没到|还没到}",
                              "{订单|包裹}{物流|配送}{信息|进度}在哪看"]),
    ("order", "cancel_order", ["{订单|这个订单}{怎么取消|能取消吗}", "我{不想要了|买错了}，{能|可以}取消订单吗", "如何{取消|撤销}{订单|刚下的单}",
                               "{下错单|拍错了}{怎么取消|怎么办}"]),
    ("order", "change_address", ["{收货地址|地址}{写错了|填错了}{怎么改|怎么办}", "怎么{修改|更改}{收货地址|配送地址}", "{订单|已下单的}地址{能改吗|可以改吗}",
                                 "我想{换|改}{一个|个}收货地址"]),
    ("order", "return_goods", ["{怎么|如何}{退货|申请退货}", "{东西|商品}{不合适|有问题}{能退吗|想退}", "{七天|7天}无理由退货{怎么操作|怎么退}",
                               "{退货|退换货}{流程|步骤}是什么"]),
    ("order", "invoice", ["{怎么|如何}开{发票|电子发票}", "{发票|电子发票}在哪{下载|查看}", "{能|可以}开{增值税发票|专票}吗",
                          "{发票|发票抬头}{开错了|写错了}{怎么改|怎么办}"]),
    ("delivery", "delivery_time", ["{什么时候|几天}{发货|能发货}", "{下单|付款}后{多久|几天}发货", "{为什么|怎么}还{不发货|没发货}",
                                   "{发货|出库}{时间|要多久}"]),
    ("delivery", "delivery_fee", ["{运费|邮费}{怎么算|多少钱}", "{包邮|免运费}吗", "{满多少|多少钱}{包邮|免运费}", "{为什么|怎么}{收了|要}{运费|邮费}"]),
    ("delivery", "damaged", ["{收到的|到的}{东西|商品}{坏了|破了}", "{快递|包裹}{被压坏了|破损了}怎么办", "{商品|东西}{有损坏|摔坏了}{能赔吗|怎么处理}",
                             "{签收|收到}{发现|时}{东西|商品}{碎了|坏了}"]),
    ("service", "human_agent", ["{怎么|如何}{转|找}人工{客服|服务}", "我要{找|跟}{人工|真人}{说话|客服}", "{人工客服|人工}{在哪|怎么联系}",
                                "{能不能|可以}{转|接}人工"]),
    ("service", "complaint", ["我要{投诉|举报}", "{怎么|如何}{投诉|反映问题}", "{服务|态度}{太差|很差}，{我要投诉|想投诉}",
                              "{投诉|投诉电话}{在哪|是多少}"]),
    ("service", "opening_hours", ["{你们|营业厅|网点}{几点|什么时候}{开门|上班}", "{营业时间|工作时间}是{几点到几点|多少}", "{周末|节假日}{上班吗|营业吗}",
                                  "{网点|营业厅}{几点|什么时候}{关门|下班}"]),
    ("service", "branch_location", ["{最近的|附近的}{网点|营业厅}在哪", "{怎么|如何}找{附近|最近}的{网点|营业厅}", "{北京|上海|广州}有{网点|营业厅}吗",
                                    "{网点|营业厅}{地址|位置}{怎么查|在哪看}"]),
    ("app", "app_crash", ["{app|软件|应用}{打不开|闪退}", "{app|软件}一{打开|登录}就{闪退|崩溃}", "为什么{app|应用}{用不了|老是闪退}",
                          "{软件|app}{崩溃|卡死}了怎么办"]),
    ("app", "app_update", ["{app|软件}{怎么|如何}更新", "{新版本|最新版}{在哪|怎么}下载", "{更新|升级}{app|软件}{失败|不了}",
                           "{app|软件}{提示|要求}{更新|升级}"]),
    ("app", "notification", ["{怎么|如何}{关闭|关掉}{消息|推送}{通知|提醒}", "{推送|消息}太多了{能关吗|怎么关}", "{不想|不要}收到{推送|通知}",
                             "{通知|提醒}{在哪|怎么}设置"]),
    ("promo", "coupon", ["{优惠券|券}{怎么用|在哪用}", "{优惠券|券}{用不了|不能用}", "{领的|我的}{优惠券|券}在哪{看|找}",
                         "{优惠券|红包}{过期了|失效了}{还能用吗|怎么办}"]),
    ("promo", "points", ["{积分|会员积分}{怎么用|能换什么}", "{积分|我的积分}{在哪查|怎么查}", "{积分|会员积分}{会过期吗|有效期多久}",
                         "{怎么|如何}{攒|获得}{积分|更多积分}"]),
    ("promo", "member", ["{怎么|如何}{成为|开通}会员", "{会员|vip}有{什么|哪些}{好处|权益}", "{会员|vip}{怎么|如何}{续费|取消}",
                         "{开通|办}会员{要多少钱|多少钱}"]),
]


def expand(template):
    """Every realisation of a template: each {a|b|c} slot takes each of its values."""
    parts = re.split(r"\{([^}]*)\}", template)
    choices = [[p] if i % 2 == 0 else p.split("|") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def phrasings(intent):
    """[(template index, text)] of an intent."""
    return [(i, text) for i, t in enumerate(intent[2]) for text in expand(t)]


def pairs(pool, n, rng, taken):
    by_topic = {}
    for topic, name, _ in INTENTS:
        by_topic.setdefault(topic, []).append(name)
    names = [name for _, name, _ in INTENTS]
    topic_of = {name: topic for topic, name, _ in INTENTS}
    out, seen = [], set()
    while len(out) < n:
        kind = len(out) % 4  # same, same, hard different, easy different: balanced labels
        a_name = rng.choice(names)
        if kind < 2:
            b_name, label = a_name, "same"
        elif kind == 2:
            b_name = rng.choice([x for x in by_topic[topic_of[a_name]] if x != a_name])
            label = "different"
        else:
            b_name = rng.choice([x for x in names if topic_of[x] != topic_of[a_name]])
            label = "different"
        (ta, a), (tb, b) = rng.choice(pool[a_name]), rng.choice(pool[b_name])
        if a == b or (label == "same" and ta == tb and len(pool[a_name]) > 1 and rng.random() < 0.7):
            continue
        key = tuple(sorted((a, b)))
        if key in seen or key in taken:
            continue
        seen.add(key)
        out.append((a, b, label))
    rng.shuffle(out)
    return out, seen


def write(path, rows):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("text_a\ttext_b\tlabel\n")
        for a, b, label in rows:
            f.write(f"{a}\t{b}\t{label}\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rng = random.Random(SEED)
    pool = {intent[1]: phrasings(intent) for intent in INTENTS}
    dev, taken = pairs(pool, DEV_PAIRS, rng, set())
    train, _ = pairs(pool, TRAIN_PAIRS, rng, taken)
    os.makedirs(args.out, exist_ok=True)
    write(os.path.join(args.out, "matching_train.tsv"), train)
    write(os.path.join(args.out, "matching_dev.tsv"), dev)
    total = sum(len(phrasings(i)) for i in INTENTS)
    print(f"{len(INTENTS)} intents, {total} phrasings; {TRAIN_PAIRS} training and {DEV_PAIRS} dev pairs")


if __name__ == "__main__":
    main()
